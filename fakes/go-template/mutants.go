package gotemplate

import (
	"fmt"
	"sort"
)

// A mutant is the template with exactly one behaviour broken, and the rules of the
// suite that must fail against it. The kill matrix serves each one and requires the
// failed rules to equal the declared ones: a mutant the suite does not catch, or one
// that breaks more than it says, is a finding about the suite or about the mutant.
//
// The breakages live here, as a table, and the correct code consults it at a few
// seams through broken(NAME); with no mutant selected every seam is the correct path.
type mutant struct {
	name     string
	declared []string
	what     string
}

var mutants = []mutant{
	{"adopts-unmarked", []string{"CRE-ADOPT-GUARD"}, "Create takes over an instance that carries no mark"},
	{"skips-uid-validation", []string{"CRE-INVALID"}, "Create accepts any UID"},
	{"no-created-at", []string{"CRE-MARK"}, "Create writes a mark without the creation time"},
	{"malformed-get-is-not-found", []string{"GET-MALFORMED"}, "Get answers a malformed id with NotFound"},
	{"unconfigured-delete-is-permanent", []string{"DEL-UNCONFIGURED"}, "Delete of an id at an unconfigured site fails permanently"},
	{"delete-ignores-ownership", []string{"DEL-OWNERSHIP"}, "Delete removes an instance that carries no mark"},
	{"list-reversed", []string{"LST-ORDER"}, "ListByTag returns the instances in reverse order"},
	{"list-leaks-unmarked", []string{"LST-MARKED-ONLY"}, "ListByTag includes instances that carry no mark"},
	{"error-without-provider-name", []string{"GEN-ERROR-NAME"}, "errors do not name the provider"},
	{"check-sequential", []string{"CHK-CONCURRENT", "CHK-REASONS"}, "Check probes the sites one after another"},
	{"check-invents-a-reason", []string{"CHK-REASONS"}, "Check reports a ready site with a reason of its own"},
	{"check-container-missing-is-unreachable", []string{"CHK-REASONS"}, "Check reports a site without its volume store as Unreachable"},
}

// active is the selected mutant; empty for the correct template. It is set once,
// before serving, and only read afterwards.
var active string

// SelectMutant makes every provider of this process the mutant name ("" for none).
func SelectMutant(name string) error {
	if name == "" {
		active = ""
		return nil
	}
	for _, m := range mutants {
		if m.name == name {
			active = name
			return nil
		}
	}
	return fmt.Errorf("unknown mutant %q (known: %v)", name, MutantNames())
}

// SelectedMutant is the selected mutant's name, or "".
func SelectedMutant() string { return active }

// MutantNames lists the mutants' names in table order.
func MutantNames() []string {
	out := make([]string, 0, len(mutants))
	for _, m := range mutants {
		out = append(out, m.name)
	}
	return out
}

// Mutants maps each mutant's name to the sorted rule IDs it must fail.
func Mutants() map[string][]string {
	out := make(map[string][]string, len(mutants))
	for _, m := range mutants {
		d := append([]string(nil), m.declared...)
		sort.Strings(d)
		out[m.name] = d
	}
	return out
}

// broken reports whether the selected mutant is name.
func broken(name string) bool { return active != "" && active == name }
