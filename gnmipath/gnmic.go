package gnmipath

import (
	"encoding/json"
	"fmt"

	"github.com/openconfig/gnmi/proto/gnmi"
	"gopkg.in/yaml.v3"
)

// GnmicRequest is one Set request as a gnmic request file (gnmic set
// --request-file FILE): its updates, replaces and deletes with each path
// in gnmic's origin:/path form, and the prefix target, which gnmic takes
// with --target, apart.
type GnmicRequest struct {
	Target string // the request prefix's target ("": none)
	File   []byte // the YAML file
}

type gnmicItem struct {
	Path     string `yaml:"path"`
	Value    any    `yaml:"value"`
	Encoding string `yaml:"encoding"`
}

type gnmicFile struct {
	Updates  []gnmicItem `yaml:"updates,omitempty"`
	Replaces []gnmicItem `yaml:"replaces,omitempty"`
	Deletes  []string    `yaml:"deletes,omitempty"`
}

// Gnmic renders req as a gnmic request file. Values are written as gnmic
// encodes them again: JSON and JSON_IETF values decoded (with their
// encoding), strings, integers, booleans and floats as they are
// (json_ietf); any other kind is an error that names its path.
func Gnmic(req *gnmi.SetRequest) (GnmicRequest, error) {
	var f gnmicFile
	prefix := req.GetPrefix()
	path := func(p *gnmi.Path) string { return OriginPath(prefix, p) }
	item := func(u *gnmi.Update) (gnmicItem, error) {
		it := gnmicItem{Path: path(u.GetPath()), Encoding: "json_ietf"}
		v := u.GetVal()
		switch x := v.GetValue().(type) {
		case *gnmi.TypedValue_JsonIetfVal:
			return it, json.Unmarshal(x.JsonIetfVal, &it.Value)
		case *gnmi.TypedValue_JsonVal:
			it.Encoding = "json"
			return it, json.Unmarshal(x.JsonVal, &it.Value)
		case *gnmi.TypedValue_StringVal:
			it.Value = x.StringVal
		case *gnmi.TypedValue_UintVal:
			it.Value = x.UintVal
		case *gnmi.TypedValue_IntVal:
			it.Value = x.IntVal
		case *gnmi.TypedValue_BoolVal:
			it.Value = x.BoolVal
		case *gnmi.TypedValue_DoubleVal:
			it.Value = x.DoubleVal
		default:
			return it, fmt.Errorf("gnmic request file: %s: a %T value has no gnmic form", it.Path, v.GetValue())
		}
		return it, nil
	}
	for _, u := range req.GetUpdate() {
		it, err := item(u)
		if err != nil {
			return GnmicRequest{}, err
		}
		f.Updates = append(f.Updates, it)
	}
	for _, u := range req.GetReplace() {
		it, err := item(u)
		if err != nil {
			return GnmicRequest{}, err
		}
		f.Replaces = append(f.Replaces, it)
	}
	for _, d := range req.GetDelete() {
		f.Deletes = append(f.Deletes, path(d))
	}
	b, err := yaml.Marshal(f)
	return GnmicRequest{Target: prefix.GetTarget(), File: b}, err
}
