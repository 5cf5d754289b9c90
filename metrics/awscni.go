package metrics

import (
	"fmt"
	"sort"
)

// Reference holds the figures that only the reference's series need.
type Reference struct {
	IPMax     int              // addresses the node may hold: max ENIs x (IPv4 per ENI - 1), x16 with prefixes
	Prefixes  int              // delegated /28 prefixes on the node's ENIs
	NoAddress int64            // ADDs that found no free address (monotonic)
	EC2Calls  map[string]int64 // EC2 calls by action (monotonic)
	EC2Errors []APIError       // EC2 errors by action and code (monotonic)
}

// APIError counts the EC2 errors of one action and code.
type APIError struct {
	API, Code string
	N         int64
}

// reference renders the amazon-vpc-cni-k8s (aws-node) series that
// dashboards and cni-metrics-helper read, with the same names and meaning.
func (m *writer) reference(in Input) {
	f, r := in.Figures, in.Reference
	m.gauge("awscni_eni_allocated", "The number of ENIs allocated", float64(f.ENIs))
	m.gauge("awscni_eni_max", "The maximum number of ENIs that can be attached to the instance", float64(f.MaxENIs))
	m.gauge("awscni_ip_max", "The maximum number of IP addresses that can be allocated to the instance", float64(r.IPMax))
	total, assigned := referenceTotals(in)
	m.gauge("awscni_total_ip_addresses", "The total number of IP addresses", total)
	m.gauge("awscni_assigned_ip_addresses", "The number of IP addresses assigned to pods", assigned)
	m.gauge("awscni_total_ipv4_prefixes", "The total number of IPv4 prefixes", float64(r.Prefixes))
	m.header("awscni_no_available_ip_addresses", "counter", "The number of pod IP assignments that fail due to no available IP addresses")
	m.sample("awscni_no_available_ip_addresses", "", float64(r.NoAddress))
	m.header("awscni_ec2api_req_count", "counter", "The number of requests made to EC2 APIs by CNI")
	names := make([]string, 0, len(r.EC2Calls))
	for k := range r.EC2Calls {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		m.sample("awscni_ec2api_req_count", fmt.Sprintf(`fn=%q`, k), float64(r.EC2Calls[k]))
	}
	m.header("awscni_aws_api_error_count", "counter", "The number of times AWS API returns an error")
	errs := append([]APIError(nil), r.EC2Errors...)
	sort.Slice(errs, func(i, j int) bool {
		return errs[i].API < errs[j].API || errs[i].API == errs[j].API && errs[i].Code < errs[j].Code
	})
	for _, e := range errs {
		m.sample("awscni_aws_api_error_count", fmt.Sprintf(`api=%q,error=%q`, e.API, e.Code), float64(e.N))
	}
}
