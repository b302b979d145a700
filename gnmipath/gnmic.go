package gnmipath

import (
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/encoding/prototext"
)

// GnmicRequest is one Set request as a file gnmic sends unchanged: the
// SetRequest in protobuf text format, its prefix (target, origin,
// elements) and all, which `gnmic set --set-proto-request-file FILE` reads
// and sends as it is (gnmic's pkg/config CreateSetRequestFromProtoFile;
// the flag is --proto-file in gnmic v0.36 to v0.44.0). A gnmic request
// file (--request-file, YAML) cannot carry it: gnmic builds a request from
// one with no prefix target, whatever --target says, and the prefix target
// names the switch behind a listener that serves several (or SONiC's
// database).
type GnmicRequest struct {
	Target string // the request prefix's target ("": none), to show
	File   []byte // the SetRequest as prototext
}

// Gnmic renders req as a prototext file for gnmic set
// --set-proto-request-file.
func Gnmic(req *gnmi.SetRequest) (GnmicRequest, error) {
	b, err := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(req)
	return GnmicRequest{Target: req.GetPrefix().GetTarget(), File: b}, err
}
