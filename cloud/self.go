package cloud

import "context"

// Self is who IMDS says this instance is: what a stored node is compared
// with before its state is trusted.
type Self struct {
	InstanceID string
	PrimaryMAC string
}

// Self reads the instance ID and the primary ENI's MAC from IMDS (two
// reads, never cached: a state file may have come from another instance,
// and a client from another process's view).
func (c *Client) Self(ctx context.Context) (Self, error) {
	r, err := c.reader(ctx)
	if err != nil {
		return Self{}, err
	}
	s := Self{InstanceID: r.get("instance-id"), PrimaryMAC: r.get("mac")}
	if r.err != nil {
		return Self{}, r.err
	}
	return s, nil
}
