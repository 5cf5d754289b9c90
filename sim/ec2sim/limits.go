package ec2sim

import (
	"encoding/csv"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"vpc-cni/internal/instancetypes"
)

var instanceTypesCSV = instancetypes.CSV

// typeInfo is one row of the instance-types table: what DescribeInstanceTypes
// reports and what the emulator enforces.
type typeInfo struct {
	Name string
	// MaxENIs is the table's max_enis: the default card's limit (card 0),
	// as eni-max-pods.txt and nodeadm's instance data give it for every
	// multi-card type; each card has as many (total()).
	MaxENIs      int
	IPv4PerENI   int
	NetworkCards int
	Hypervisor   string // "nitro", "xen" or "" (bare metal: EC2 omits it)
	BareMetal    bool
}

var (
	typesOnce  sync.Once
	typesTable map[string]typeInfo
	typesErr   error
)

// instanceTypes parses the embedded table once, on first use, so importing the
// package costs nothing at start-up.
func instanceTypes() (map[string]typeInfo, error) {
	typesOnce.Do(func() { typesTable, typesErr = parseInstanceTypes(instanceTypesCSV) })
	return typesTable, typesErr
}

func parseInstanceTypes(text string) (map[string]typeInfo, error) {
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("instance types table: %w", err)
	}
	out := make(map[string]typeInfo, len(rows))
	for i, row := range rows {
		if i == 0 {
			continue // header
		}
		t, err := parseTypeRow(row)
		if err != nil {
			return nil, fmt.Errorf("instance types table line %d: %w", i+1, err)
		}
		out[t.Name] = t
	}
	return out, nil
}

func parseTypeRow(row []string) (typeInfo, error) {
	if len(row) != 6 {
		return typeInfo{}, fmt.Errorf("want 6 fields, got %d", len(row))
	}
	var nums [3]int
	for i := range nums {
		n, err := strconv.Atoi(row[i+1])
		if err != nil || n < 1 {
			return typeInfo{}, fmt.Errorf("bad number %q", row[i+1])
		}
		nums[i] = n
	}
	hv := row[4]
	if hv == "unknown" {
		hv = ""
	}
	return typeInfo{Name: row[0], MaxENIs: nums[0], IPv4PerENI: nums[1], NetworkCards: nums[2],
		Hypervisor: hv, BareMetal: row[5] == "true"}, nil
}

// total is the instance's ENI limit over all its cards.
func (t typeInfo) total() int { return t.MaxENIs * t.NetworkCards }

// sortedTypeNames lists every known type, for unfiltered DescribeInstanceTypes.
func sortedTypeNames(table map[string]typeInfo) []string {
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TypeLimits returns an instance type's ENIs on card 0, IPv4 addresses per ENI and
// hypervisor from the emulator's table (for models that do not run the
// emulator); ok is false for a type the table lacks.
func TypeLimits(instanceType string) (maxENIs, ipv4PerENI int, hypervisor string, ok bool) {
	table, err := instanceTypes()
	if err != nil {
		return 0, 0, "", false
	}
	t, ok := table[instanceType]
	return t.MaxENIs, t.IPv4PerENI, t.Hypervisor, ok
}
