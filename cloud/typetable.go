package cloud

import (
	"encoding/csv"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"vpc-cni/internal/instancetypes"

	"vpc-cni/pool"
)

// instanceTypesCSV is EC2's networking limits per instance type, as
// DescribeInstanceTypes reported them (the emulator serves the same table):
// ENABLE_IMDS_ONLY_MODE learns a node's limits here, making no EC2 call.
var instanceTypesCSV = instancetypes.CSV

var (
	tableOnce sync.Once
	table     map[string]InstanceTypeInfo
	tableErr  error
)

// BuiltinLimits looks the instance type up in the built-in table. The table
// is parsed on first use, so the plugin's start pays nothing for it.
// KindNotFound for a type the table does not know (one newer than this
// binary): IMDS-only mode cannot learn its limits.
func BuiltinLimits(instanceType string) (pool.Limits, InstanceTypeInfo, error) {
	tableOnce.Do(func() { table, tableErr = parseTypeTable(instanceTypesCSV) })
	if tableErr != nil {
		return pool.Limits{}, InstanceTypeInfo{}, tableErr
	}
	info, ok := table[instanceType]
	if !ok {
		return pool.Limits{}, InstanceTypeInfo{}, &Error{Op: "builtin:instance-types", Kind: KindNotFound,
			Msg: fmt.Sprintf("instance type %q is not in vpc-cni's built-in table, and IMDS-only mode asks EC2 nothing", instanceType)}
	}
	return pool.Limits{MaxENIs: info.MaxENIsCard0, IPv4PerENI: info.IPv4PerENI}, info, nil
}

// BuiltinTypes lists the built-in table's instance types, sorted.
func BuiltinTypes() []string {
	tableOnce.Do(func() { table, tableErr = parseTypeTable(instanceTypesCSV) })
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// parseTypeTable reads instance_type,max_enis,ipv4_per_eni,network_cards,
// hypervisor,bare_metal rows.
func parseTypeTable(text string) (map[string]InstanceTypeInfo, error) {
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("built-in instance types table: %w", err)
	}
	out := make(map[string]InstanceTypeInfo, len(rows))
	for i, row := range rows[min(1, len(rows)):] { // the header
		if len(row) != 6 {
			return nil, fmt.Errorf("built-in instance types table line %d: want 6 fields, got %d", i+2, len(row))
		}
		var n [3]int
		for j := range n {
			if n[j], err = strconv.Atoi(row[j+1]); err != nil || n[j] < 1 {
				return nil, fmt.Errorf("built-in instance types table line %d: bad number %q", i+2, row[j+1])
			}
		}
		info := InstanceTypeInfo{InstanceType: row[0], MaxENIs: n[0], IPv4PerENI: n[1], NetworkCards: n[2],
			Hypervisor: strings.TrimSuffix(row[4], "unknown"), BareMetal: row[5] == "true"}
		// max_enis is the default card's limit (it agrees with
		// eni-max-pods.txt on every multi-card type); each card has as many.
		info.MaxENIsCard0, info.MaxENIs = info.MaxENIs, info.MaxENIs*info.NetworkCards
		info.PrefixDelegation = PrefixCapable(info.Hypervisor)
		out[info.InstanceType] = info
	}
	return out, nil
}
