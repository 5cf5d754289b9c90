// Package instancetypes holds EC2's networking limits per instance type, as
// DescribeInstanceTypes reported them: one table, read by the emulator
// (what it serves and enforces) and by cloud (ENABLE_IMDS_ONLY_MODE learns
// a node's limits from it). Data only: each reader parses what it needs.
package instancetypes

import _ "embed"

// CSV is the table: a header line, then one instance type per line.
//
//go:embed instance-types.csv
var CSV string
