package hostnet

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"
)

// tableInPlace reports whether our table holds exactly the rules of want
// (nil: whether it is absent). Rules are recognised by the comment each
// carries, which names the configuration and the rule's position.
func tableInPlace(c *nftables.Conn, family nftables.TableFamily, want *tableSpec) (bool, error) {
	exists, err := tableExists(c, family)
	if err != nil || !exists || want == nil {
		return err == nil && exists == (want != nil), err
	}
	var got []string
	for _, ch := range want.chains {
		rules, err := c.GetRules(want.table, ch)
		if isNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading nftables chain %s: %w", ch.Name, err)
		}
		for _, r := range rules {
			got = append(got, comment(r))
		}
	}
	var exp []string
	for _, ch := range want.chains {
		for _, r := range want.rules {
			if r.Chain == ch {
				exp = append(exp, comment(r))
			}
		}
	}
	return slices.Equal(got, exp), nil
}

func comment(r *nftables.Rule) string {
	s, _ := userdata.GetString(r.UserData, userdata.TypeComment)
	return s
}

// replaceTable deletes our table, if present, and builds want in the same
// netlink batch: the change is atomic, and a half-flushed table is rebuilt.
func replaceTable(c *nftables.Conn, family nftables.TableFamily, want *tableSpec) error {
	exists, err := tableExists(c, family)
	if err != nil {
		return err
	}
	t := &nftables.Table{Family: family, Name: TableName}
	if exists {
		c.DelTable(t)
	}
	if want != nil {
		c.AddTable(want.table)
		for _, ch := range want.chains {
			c.AddChain(ch)
		}
		for _, r := range want.rules {
			c.AddRule(r)
		}
	}
	if !exists && want == nil {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("writing nftables table %s %s: %w", familyName(family), TableName, err)
	}
	return nil
}

func tableExists(c *nftables.Conn, family nftables.TableFamily) (bool, error) {
	tables, err := c.ListTablesOfFamily(family)
	if err != nil {
		return false, fmt.Errorf("listing nftables tables: %w", err)
	}
	return slices.ContainsFunc(tables, func(t *nftables.Table) bool { return t.Name == TableName }), nil
}

func isNotFound(err error) bool { return errors.Is(err, unix.ENOENT) }

func familyName(f nftables.TableFamily) string {
	if f == nftables.TableFamilyIPv6 {
		return "ip6"
	}
	return "ip"
}
