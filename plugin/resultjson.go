package plugin

import (
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// printResult writes r as r.PrintTo does, byte for byte. A 1.x result's
// PrintTo reflects over its types, marshals, unmarshals into a map and
// marshals again: on a process that prints once, that is about a tenth of
// an ADD's instructions, spent warming encoders. Its output is plain (keys
// sorted, numbers as float64, four-space indent), so a 1.x result is
// written here directly; anything else, or anything odd in it (a nil entry,
// an IP of no valid length, a string not UTF-8), goes to PrintTo.
func printResult(w io.Writer, r types.Result) error {
	res, ok := r.(*current.Result)
	if !ok {
		return r.PrintTo(w)
	}
	tree, ok := resultTree(res)
	if !ok {
		return r.PrintTo(w)
	}
	_, err := w.Write(appendJSON(nil, tree, 0))
	return err
}

// A JSON value: jraw (encoded text), []any (an array) or []jfield (an
// object, its keys in sorted order).
type jraw string

type jfield struct {
	key string
	val any
}

// jtree collects a result's values; ok turns false at the first one the
// map round trip would write differently than encoding it once does.
type jtree struct{ ok bool }

func resultTree(r *current.Result) ([]jfield, bool) {
	t := &jtree{ok: true}
	var obj []jfield
	obj = t.str(obj, "cniVersion", r.CNIVersion, true)
	if !r.DNS.IsEmpty() {
		obj = append(obj, jfield{"dns", t.dns(r.DNS)})
	}
	if len(r.Interfaces) > 0 {
		obj = append(obj, jfield{"interfaces", listOf(t, r.Interfaces, t.iface)})
	}
	if len(r.IPs) > 0 {
		obj = append(obj, jfield{"ips", listOf(t, r.IPs, t.ipConfig)})
	}
	if len(r.Routes) > 0 {
		obj = append(obj, jfield{"routes", listOf(t, r.Routes, t.route)})
	}
	return obj, t.ok
}

func listOf[T any](t *jtree, items []*T, each func(*T) []jfield) []any {
	out := make([]any, 0, len(items))
	for _, it := range items {
		if it == nil {
			t.ok = false
			return nil
		}
		out = append(out, each(it))
	}
	return out
}

func (t *jtree) iface(i *current.Interface) (o []jfield) {
	o = t.str(o, "mac", i.Mac, true)
	o = num(o, "mtu", i.Mtu, true)
	o = t.str(o, "name", i.Name, false)
	o = t.str(o, "pciID", i.PciID, true)
	o = t.str(o, "sandbox", i.Sandbox, true)
	return t.str(o, "socketPath", i.SocketPath, true)
}

func (t *jtree) ipConfig(c *current.IPConfig) (o []jfield) {
	o = t.str(o, "address", c.Address.String(), false)
	o = t.ip(o, "gateway", c.Gateway)
	return numPtr(o, "interface", c.Interface)
}

func (t *jtree) route(r *types.Route) (o []jfield) {
	o = num(o, "advmss", r.AdvMSS, true)
	o = t.str(o, "dst", r.Dst.String(), false)
	o = t.ip(o, "gw", r.GW)
	o = num(o, "mtu", r.MTU, true)
	o = num(o, "priority", r.Priority, true)
	o = numPtr(o, "scope", r.Scope)
	return numPtr(o, "table", r.Table)
}

func (t *jtree) dns(d types.DNS) (o []jfield) {
	o = t.str(o, "domain", d.Domain, true)
	o = t.strs(o, "nameservers", d.Nameservers)
	o = t.strs(o, "options", d.Options)
	return t.strs(o, "search", d.Search)
}

func (t *jtree) str(o []jfield, key, s string, omitEmpty bool) []jfield {
	if omitEmpty && s == "" {
		return o
	}
	return append(o, jfield{key, t.quote(s)})
}

func (t *jtree) strs(o []jfield, key string, ss []string) []jfield {
	if len(ss) == 0 {
		return o
	}
	list := make([]any, len(ss))
	for i, s := range ss {
		list[i] = t.quote(s)
	}
	return append(o, jfield{key, list})
}

// ip is encoded as net.IP's MarshalText does, omitted when empty.
func (t *jtree) ip(o []jfield, key string, ip net.IP) []jfield {
	if len(ip) == 0 {
		return o
	}
	if len(ip) != net.IPv4len && len(ip) != net.IPv6len {
		t.ok = false
		return o
	}
	return append(o, jfield{key, t.quote(ip.String())})
}

// quote encodes s as encoding/json does; a string that is not UTF-8 would
// come out of the round trip otherwise.
func (t *jtree) quote(s string) jraw {
	if !utf8.ValidString(s) {
		t.ok = false
		return ""
	}
	b, _ := json.Marshal(s) // a string always encodes
	return jraw(b)
}

// num writes n as the round trip does, through float64.
func num(o []jfield, key string, n int, omitZero bool) []jfield {
	if omitZero && n == 0 {
		return o
	}
	return append(o, jfield{key, jraw(strconv.FormatFloat(float64(n), 'f', -1, 64))})
}

func numPtr(o []jfield, key string, n *int) []jfield {
	if n == nil {
		return o
	}
	return num(o, key, *n, false)
}

// appendJSON writes v as json.MarshalIndent(v, "", "    ") does.
func appendJSON(b []byte, v any, depth int) []byte {
	switch v := v.(type) {
	case jraw:
		return append(b, v...)
	case []any:
		return appendItems(b, '[', ']', len(v), depth, func(b []byte, i int) []byte {
			return appendJSON(b, v[i], depth+1)
		})
	case []jfield:
		return appendItems(b, '{', '}', len(v), depth, func(b []byte, i int) []byte {
			b = append(append(b, strconv.Quote(v[i].key)...), ": "...)
			return appendJSON(b, v[i].val, depth+1)
		})
	}
	panic("resultjson: unknown value")
}

func appendItems(b []byte, open, close byte, n, depth int, item func([]byte, int) []byte) []byte {
	b = append(b, open)
	if n == 0 {
		return append(b, close)
	}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, '\n'), strings.Repeat("    ", depth+1)...)
		b = item(b, i)
	}
	b = append(append(b, '\n'), strings.Repeat("    ", depth)...)
	return append(b, close)
}
