package gnmiclient

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"

	"github.com/ecntune/ecntune/gnmipath"
)

// leafSwitch is an openconfig switch that answers Get from a fixed table
// of leaves (full path -> JSON_IETF value), every leaf under a path asked,
// in one notification; it serves nothing else unless embedded.
type leafSwitch struct {
	gnmi.UnimplementedGNMIServer
	leaves map[string]string
}

func (s *leafSwitch) Get(_ context.Context, req *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	n := &gnmi.Notification{}
	for _, p := range req.GetPath() {
		under := gnmipath.PathString(gnmipath.FullElems(req.GetPrefix(), p))
		for k, v := range s.leaves {
			if strings.HasPrefix(k, under) {
				n.Update = append(n.Update, jsonUpdate(k, v))
			}
		}
	}
	return &gnmi.GetResponse{Notification: []*gnmi.Notification{n}}, nil
}

// jsonUpdate is the update of the leaf at path (as gnmipath.ParsePath
// reads it) to the JSON_IETF value v.
func jsonUpdate(path, v string) *gnmi.Update {
	_, el, err := gnmipath.ParsePath(path)
	if err != nil {
		panic(err)
	}
	return &gnmi.Update{Path: &gnmi.Path{Elem: el}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(v)}}}
}

// serveFake serves srv on a free loopback port until the test ends and
// returns its address.
func serveFake(t *testing.T, srv gnmi.GNMIServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	gnmi.RegisterGNMIServer(gs, srv)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}
