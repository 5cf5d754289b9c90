package settings

import "time"

// EC2ResyncInterval is the safety net of the IMDS steady state: a pass whose
// IMDS view agrees with the store makes no EC2 call, and reads EC2 anyway
// when this long (jittered ±10 %, so nodes spread out) has passed since it
// last did, so changes made outside the node are found. Seconds or a Go
// duration; 0 reads EC2 on every pass.
const EC2ResyncInterval = "VPC_CNI_EC2_RESYNC_INTERVAL"

// DefaultEC2Resync is the safety net's default: 5,000 nodes on it ask EC2
// about 5.5 times a second together (docs/targets.md, cluster scale).
const DefaultEC2Resync = 15 * time.Minute
