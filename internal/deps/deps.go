// Package deps pins the project's third-party dependencies in go.mod while
// the packages that use them are written. It has no code of its own.
package deps

import (
	_ "github.com/openconfig/gnmi/proto/gnmi"
	_ "github.com/openconfig/gnmic/pkg/api"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/bbolt"
	_ "go4.org/unsafe/assume-no-moving-gc"
	_ "gonum.org/v1/gonum/stat"
	_ "gonum.org/v1/plot"
	_ "gopkg.in/yaml.v3"
	_ "gorgonia.org/gorgonia"
)
