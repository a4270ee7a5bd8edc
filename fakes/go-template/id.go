package gotemplate

import (
	"fmt"
	"strings"

	provider "kvm2conformance/sdk"
)

func instanceID(site, name string) string { return "sites/" + site + "/instances/" + name }

// parseID splits a well-formed ID into its site and name.
func parseID(id string) (site, name string, ok bool) {
	parts := strings.Split(id, "/")
	if len(parts) != 4 || parts[0] != "sites" || parts[2] != "instances" {
		return "", "", false
	}
	if validateLabel("site", parts[1], 63) != nil || validateLabel("name", parts[3], 63) != nil {
		return "", "", false
	}
	return parts[1], parts[3], true
}

// validateLabel accepts 1 to max characters of a-z, 0-9 and '-', starting with a letter.
func validateLabel(field, v string, max int) error {
	switch {
	case v == "":
		return fmt.Errorf("%s is empty", field)
	case len(v) > max:
		return fmt.Errorf("%s is %d bytes, longer than %d", field, len(v), max)
	case v[0] < 'a' || v[0] > 'z':
		return fmt.Errorf("%s must start with a lowercase letter", field)
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("%s contains %q; only a-z, 0-9 and '-' are allowed", field, c)
		}
	}
	return nil
}

func validateUID(uid string) error {
	switch {
	case uid == "":
		return fmt.Errorf("uid is empty")
	case len(uid) > 128:
		return fmt.Errorf("uid is %d bytes, longer than 128", len(uid))
	}
	for _, c := range uid {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("uid contains %q; only letters, digits, '-', '_' and '.' are allowed", c)
		}
	}
	return nil
}

func validateRequest(r *provider.CreateRequest) error {
	if err := validateLabel("name", r.Name, 63); err != nil {
		return err
	}
	if err := validateUID(r.UID); err != nil && !broken("skips-uid-validation") {
		return err
	}
	return validateLabel("tag", r.Tag, 63)
}
