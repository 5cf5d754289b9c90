package cloud

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// readOnlyBodies hides the WriteTo method of the request bodies the SDK
// hands to the HTTP client, working around smithy-go v1.28.9
// (transport/http/internal/io, safeWriteToReadCloser): once closed, its
// WriteTo reports io.EOF where a finished copy reports nil.
//
// The SDK closes the body as soon as the HTTP client returns the response
// headers. net/http's writeLoop, after writing ContentLength bytes straight
// to the socket, copies the body once more to check nothing is left
// (transfer.go, writeBody); that copy goes through WriteTo. When the answer
// overtook the writeLoop (a loopback emulator answers in microseconds), the
// copy fails with io.EOF, the transport closes the connection, and the
// deserializer still reading the response fails with "use of closed network
// connection" (and every retry can fail the same way). Read on a closed body
// reports a clean io.EOF, which the copy takes as the end.
type readOnlyBodies struct{ aws.HTTPClient }

func (c readOnlyBodies) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req = req.WithContext(req.Context()) // a shallow copy: the caller's request stays as it was
		req.Body = readOnlyBody{req.Body}
	}
	return c.HTTPClient.Do(req)
}

// readOnlyBody is a body with no method but Read and Close.
type readOnlyBody struct{ rc io.ReadCloser }

func (b readOnlyBody) Read(p []byte) (int, error) { return b.rc.Read(p) }
func (b readOnlyBody) Close() error               { return b.rc.Close() }
