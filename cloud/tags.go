package cloud

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The tags and description the reference (amazon-vpc-cni-k8s) puts on its
// ENIs, so existing cleanup tooling recognises ours.
const (
	TagInstanceID     = "node.k8s.amazonaws.com/instance_id"
	TagCreatedAt      = "node.k8s.amazonaws.com/createdAt" // RFC3339
	TagClusterName    = "cluster.k8s.amazonaws.com/name"
	TagOwner          = "eks:eni:owner" // with ClusterName
	TagOwnerValue     = "amazon-vpc-cni"
	DescriptionPrefix = "aws-K8S-"
)

// TagIntent is ours alone: the ClientToken of the create that made the ENI,
// so the repair of an interrupted create can ask EC2 whether it happened.
const TagIntent = "vpc-cni/intent"

// ownerTags are the tags of an ENI this node creates; extra ones cannot
// override them.
func (c *Client) ownerTags(instanceID string, now time.Time, extra map[string]string) map[string]string {
	tags := make(map[string]string, len(extra)+4)
	for k, v := range extra {
		tags[k] = v
	}
	tags[TagInstanceID] = instanceID
	tags[TagCreatedAt] = now.UTC().Format(time.RFC3339)
	if c.opts.ClusterName != "" {
		tags[TagClusterName] = c.opts.ClusterName
		tags[TagOwner] = TagOwnerValue
	}
	return tags
}

// ec2Tags sorts by key so requests are deterministic.
func ec2Tags(m map[string]string) []types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, 0, len(m))
	for _, k := range keys {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func tagMap(tags []types.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// TagENI sets tags on an ENI (CreateTags; existing keys are overwritten).
func (c *Client) TagENI(ctx context.Context, eniID string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	_, err := call(ctx, c, "CreateTags", func(h ec2Handle) (*ec2.CreateTagsOutput, error) {
		return h.client().CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{eniID}, Tags: ec2Tags(tags)})
	})
	return err
}

// LeakedENIs finds ENIs this node created and lost: in the VPC (and the
// cluster, with ClusterName), tagged with this node's instance id, status
// available, description aws-K8S-, and created more than olderThan before
// now. Only this node's: an ENI another node or a user tagged is theirs to
// clean up. As the reference does, such an ENI lacking a valid createdAt
// tag is tagged with now and left for a later sweep.
func (c *Client) LeakedENIs(ctx context.Context, vpcID, instanceID string, olderThan time.Duration, now time.Time) ([]ENIInfo, error) {
	filters := []types.Filter{
		filter("tag:"+TagInstanceID, instanceID), filter("status", string(types.NetworkInterfaceStatusAvailable)),
		filter("vpc-id", vpcID),
	}
	if c.opts.ClusterName != "" {
		filters = append(filters, filter("tag:"+TagClusterName, c.opts.ClusterName))
	}
	enis, err := c.describeENIs(ctx, filters)
	if err != nil {
		return nil, err
	}
	var leaked []ENIInfo
	for _, e := range enis {
		if !strings.HasPrefix(e.Description, DescriptionPrefix) || e.Attached || e.Tags[TagInstanceID] != instanceID {
			continue
		}
		if e.CreatedAt.IsZero() {
			if err := c.TagENI(ctx, e.ID, map[string]string{TagCreatedAt: now.UTC().Format(time.RFC3339)}); err != nil && !IsKind(err, KindNotFound) {
				return nil, err
			}
			continue
		}
		if now.Sub(e.CreatedAt) > olderThan {
			leaked = append(leaked, e)
		}
	}
	sort.Slice(leaked, func(i, j int) bool { return leaked[i].ID < leaked[j].ID })
	return leaked, nil
}
