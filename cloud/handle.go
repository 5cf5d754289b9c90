package cloud

import (
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// ec2Handle holds the EC2 client where reflection cannot see its type.
//
// urfave/cli renders help with text/template, which looks methods up by
// name; the linker then keeps every exported method of every type that
// reflection could reach from an interface value. A *ec2.Client reachable
// that way (a struct field of a type put in an interface, a generic
// function's dictionary, the SDK's paginators) drags all ~700 EC2
// operations and their serializers into the binary: 43 MB instead of 14 MB,
// and more start-up work in every plugin run. The pointer round-trips to
// the same type, so this is ordinary, GC-safe unsafe.Pointer use.
type ec2Handle struct{ p unsafe.Pointer }

func handleOf(c *ec2.Client) ec2Handle { return ec2Handle{unsafe.Pointer(c)} }

func (h ec2Handle) client() *ec2.Client { return (*ec2.Client)(h.p) }

func (h ec2Handle) empty() bool { return h.p == nil }
