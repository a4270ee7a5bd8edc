package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket/dialers"
)

const (
	uploadLen = 300000
	volumeLen = 1 << 20
)

// transcript prints one JSON line per step of the session.
type transcript struct {
	enc *json.Encoder
}

type line struct {
	Step  string      `json:"step"`
	Value interface{} `json:"value"`
	Error *stepError  `json:"error,omitempty"`
}

type stepError struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

// run records one step: its value, or the libvirt error it failed with.
// An error that is no libvirt error (the connection broke) ends the
// session.
func (t *transcript) run(step string, fn func() (interface{}, error)) interface{} {
	v, err := fn()
	if err != nil {
		var le libvirt.Error
		if !errors.As(err, &le) {
			fmt.Fprintf(os.Stderr, "go-libvirt session: %s: %v\n", step, err)
			os.Exit(1)
		}
		_ = t.enc.Encode(line{Step: step, Error: &stepError{Code: le.Code, Message: le.Message}})
		return nil
	}
	if v == nil {
		v = 0
	}
	_ = t.enc.Encode(line{Step: step, Value: v})
	return v
}

// none adapts a call that returns only an error.
func none(err error) (interface{}, error) { return nil, err }

func uploadData() []byte {
	data := make([]byte, uploadLen)
	for i := range data {
		data[i] = byte((i * 7) % 251)
	}
	return data
}

// cuttable dials the daemon's socket and keeps the connection, so the
// session can close it under go-libvirt.
type cuttable struct {
	socket string
	conn   net.Conn
}

func (c *cuttable) Dial() (net.Conn, error) {
	conn, err := net.Dial("unix", c.socket)
	c.conn = conn
	return conn, err
}

func connect(dialer interface {
	Dial() (net.Conn, error)
}) (*libvirt.Libvirt, error) {
	l := libvirt.NewWithDialer(dialer)
	if err := l.ConnectToURI(libvirt.QEMUSystem); err != nil {
		return nil, err
	}
	return l, nil
}

// session runs the sequence that fakes/libvirt/tests/clients.rs compares
// (the same as clients/python/session.py) against the daemon on socket.
func session(socket, prefix, dir string) error {
	t := &transcript{enc: json.NewEncoder(os.Stdout)}
	domName, poolName := prefix+"-dom", prefix+"-pool"
	l, err := connect(dialers.NewLocal(dialers.WithSocket(socket)))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", socket, err)
	}
	t.run("connect", func() (interface{}, error) { return "ok", nil })
	t.run("lib_version", func() (interface{}, error) { return l.ConnectGetLibVersion() })
	t.run("hypervisor_version", func() (interface{}, error) { return l.ConnectGetVersion() })
	t.run("hostname", func() (interface{}, error) { return l.ConnectGetHostname() })
	t.run("capabilities", func() (interface{}, error) { return l.ConnectGetCapabilities() })
	dom, err := domainLife(t, l, prefix, domName)
	if err != nil {
		return err
	}
	pool, err := storage(t, l, prefix, poolName, filepath.Join(dir, "pool"))
	if err != nil {
		return err
	}
	t.run("concurrent", func() (interface{}, error) { return concurrent(l, domName, 8), nil })
	t.run("undefine", func() (interface{}, error) {
		return none(l.DomainUndefineFlags(dom, libvirt.DomainUndefineNvram))
	})
	t.run("lookup_undefined", func() (interface{}, error) {
		d, err := l.DomainLookupByName(domName)
		return d.Name, err
	})
	t.run("pool_destroy", func() (interface{}, error) { return none(l.StoragePoolDestroy(pool)) })
	t.run("pool_undefine", func() (interface{}, error) { return none(l.StoragePoolUndefine(pool)) })
	t.run("pool_lookup_undefined", func() (interface{}, error) {
		p, err := l.StoragePoolLookupByName(poolName)
		return p.Name, err
	})
	if err := l.Disconnect(); err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	return closedUnder(t, socket, domName)
}

func domainLife(t *transcript, l *libvirt.Libvirt, prefix, name string) (libvirt.Domain, error) {
	listed := func() (interface{}, error) {
		doms, _, err := l.ConnectListAllDomains(1, libvirt.ConnectListDomainsActive|libvirt.ConnectListDomainsInactive)
		names := []string{}
		for _, d := range doms {
			if strings.HasPrefix(d.Name, prefix) {
				names = append(names, d.Name)
			}
		}
		sort.Strings(names)
		return names, err
	}
	xml := fmt.Sprintf("<domain type='qemu'>\n  <name>%s</name>\n  <memory unit='MiB'>64</memory>\n"+
		"  <vcpu>1</vcpu>\n  <os><type arch='x86_64' machine='pc'>hvm</type></os>\n</domain>\n", name)
	t.run("list_domains", listed)
	t.run("define", func() (interface{}, error) {
		d, err := l.DomainDefineXML(xml)
		return d.Name, err
	})
	dom, err := l.DomainLookupByName(name)
	if err != nil {
		return dom, fmt.Errorf("look up %s: %w", name, err)
	}
	t.run("lookup", func() (interface{}, error) { return dom.Name, nil })
	info := func() (interface{}, error) {
		state, maxMem, mem, vcpus, _, err := l.DomainGetInfo(dom)
		return []uint64{uint64(state), maxMem, mem, uint64(vcpus)}, err
	}
	state := func() (interface{}, error) {
		s, r, err := l.DomainGetState(dom, 0)
		return []int32{s, r}, err
	}
	t.run("info", info)
	t.run("state", state)
	t.run("xml", func() (interface{}, error) { return l.DomainGetXMLDesc(dom, 0) })
	t.run("start", func() (interface{}, error) { return none(l.DomainCreate(dom)) })
	t.run("start_again", func() (interface{}, error) { return none(l.DomainCreate(dom)) })
	t.run("info_running", info)
	t.run("list_domains_running", listed)
	t.run("suspend", func() (interface{}, error) { return none(l.DomainSuspend(dom)) })
	t.run("state_paused", state)
	t.run("resume", func() (interface{}, error) { return none(l.DomainResume(dom)) })
	t.run("state_resumed", state)
	t.run("destroy", func() (interface{}, error) { return none(l.DomainDestroy(dom)) })
	t.run("state_destroyed", state)
	t.run("destroy_again", func() (interface{}, error) { return none(l.DomainDestroy(dom)) })
	t.run("suspend_inactive", func() (interface{}, error) { return none(l.DomainSuspend(dom)) })
	return dom, nil
}

func storage(t *transcript, l *libvirt.Libvirt, prefix, name, dir string) (libvirt.StoragePool, error) {
	poolXML := fmt.Sprintf("<pool type='dir'><name>%s</name><target><path>%s</path></target></pool>", name, dir)
	volXML := fmt.Sprintf("<volume><name>v.img</name><capacity unit='bytes'>%d</capacity>"+
		"<target><format type='raw'/></target></volume>", volumeLen)
	t.run("pool_define", func() (interface{}, error) {
		p, err := l.StoragePoolDefineXML(poolXML, 0)
		return p.Name, err
	})
	pool, err := l.StoragePoolLookupByName(name)
	if err != nil {
		return pool, fmt.Errorf("look up pool %s: %w", name, err)
	}
	t.run("pool_build", func() (interface{}, error) { return none(l.StoragePoolBuild(pool, 0)) })
	t.run("pool_start", func() (interface{}, error) { return none(l.StoragePoolCreate(pool, 0)) })
	t.run("pool_list", func() (interface{}, error) {
		pools, _, err := l.ConnectListAllStoragePools(1, 0)
		names := []string{}
		for _, p := range pools {
			if strings.HasPrefix(p.Name, prefix) {
				names = append(names, p.Name)
			}
		}
		sort.Strings(names)
		return names, err
	})
	t.run("pool_state", func() (interface{}, error) {
		state, _, _, _, err := l.StoragePoolGetInfo(pool)
		return state, err
	})
	create := func() (interface{}, error) {
		v, err := l.StorageVolCreateXML(pool, volXML, 0)
		return v.Name, err
	}
	t.run("vol_create", create)
	t.run("vol_create_again", create)
	t.run("vol_list", func() (interface{}, error) {
		vols, _, err := l.StoragePoolListAllVolumes(pool, 1, 0)
		names := []string{}
		for _, v := range vols {
			names = append(names, v.Name)
		}
		sort.Strings(names)
		return names, err
	})
	vol, err := l.StorageVolLookupByName(pool, "v.img")
	if err != nil {
		return pool, fmt.Errorf("look up v.img: %w", err)
	}
	volInfo := func() (interface{}, error) {
		typ, capacity, alloc, err := l.StorageVolGetInfo(vol)
		return []uint64{uint64(typ), capacity, alloc}, err
	}
	t.run("vol_info", volInfo)
	t.run("vol_path", func() (interface{}, error) { return l.StorageVolGetPath(vol) })
	data := uploadData()
	t.run("upload", func() (interface{}, error) {
		err := l.StorageVolUpload(vol, bytes.NewReader(data), 0, uint64(len(data)), 0)
		return len(data), err
	})
	t.run("download", func() (interface{}, error) {
		var got bytes.Buffer
		err := l.StorageVolDownload(vol, &got, 0, 0, 0)
		want := append(append([]byte{}, data...), make([]byte, volumeLen-len(data))...)
		return map[string]interface{}{"bytes": got.Len(), "identical": bytes.Equal(got.Bytes(), want)}, err
	})
	t.run("vol_info_uploaded", volInfo)
	t.run("vol_delete", func() (interface{}, error) { return none(l.StorageVolDelete(vol, 0)) })
	t.run("vol_lookup_deleted", func() (interface{}, error) {
		v, err := l.StorageVolLookupByName(pool, "v.img")
		return v.Name, err
	})
	return pool, nil
}

// concurrent makes n calls at once on the one connection (libvirtd works
// on 5 at a time) and reports each call's success.
func concurrent(l *libvirt.Libvirt, dom string, n int) []interface{} {
	results := make([]interface{}, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var err error
			if i%2 == 1 {
				var d libvirt.Domain
				d, err = l.DomainLookupByName(dom)
				results[i] = err == nil && d.Name == dom
			} else {
				var v uint64
				v, err = l.ConnectGetLibVersion()
				results[i] = err == nil && v > 0
			}
			var le libvirt.Error
			if errors.As(err, &le) {
				results[i] = fmt.Sprintf("error %d", le.Code)
			}
		}(i)
	}
	wg.Wait()
	return results
}

// closedUnder closes a connection under go-libvirt, calls on it, then
// checks that the daemon answers a new connection.
func closedUnder(t *transcript, socket, dom string) error {
	dialer := &cuttable{socket: socket}
	l, err := connect(dialer)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", socket, err)
	}
	t.run("before_cut_hostname_known", func() (interface{}, error) {
		h, err := l.ConnectGetHostname()
		return h != "", err
	})
	_ = dialer.conn.Close()
	<-l.Disconnected()
	after := "answered"
	if _, err := l.DomainLookupByName(dom); err != nil {
		after = "failed"
	}
	t.run("call_after_close", func() (interface{}, error) { return after, nil })
	again, err := connect(dialers.NewLocal(dialers.WithSocket(socket)))
	if err != nil {
		return fmt.Errorf("reconnect to %s: %w", socket, err)
	}
	t.run("reconnect_lib_version_known", func() (interface{}, error) {
		v, err := again.ConnectGetLibVersion()
		return v > 0, err
	})
	return again.Disconnect()
}
