package agent

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Telling an agent database from other bbolt files, and reading one.

// registryMarker is the bucket every ecntune model registry has (see
// models: "registry" holds its schema).
var registryMarker = []byte("registry")

// checkAgentDB tells whether the open bbolt file is an agent database
// (it has the audit bucket) or a new, empty one; anything else is
// refused, before any bucket is written: the model registry (the agent
// would write its buckets into it and hold its lock), or a bbolt database
// of something else.
func checkAgentDB(tx *bolt.Tx) error {
	var names []string
	isAgent, isRegistry := false, false
	_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, string(name))
		isAgent = isAgent || bytes.Equal(name, bucketAudit)
		isRegistry = isRegistry || bytes.Equal(name, registryMarker)
		return nil
	})
	switch {
	case isRegistry:
		return fmt.Errorf("this is an ecntune model registry, not an agent database: give the agent a db of its own (the model registry is the config's registry)")
	case isAgent || len(names) == 0:
		return nil
	}
	sort.Strings(names)
	if len(names) > 6 {
		names = append(names[:6], "...")
	}
	return fmt.Errorf("a bbolt database but not an ecntune agent database (buckets: %s): give the agent a db of its own", strings.Join(names, ", "))
}

// notBolt explains bbolt's errors for a file that is not a bbolt database.
func notBolt(err error) error {
	if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrVersionMismatch) || errors.Is(err, berrors.ErrChecksum) {
		return fmt.Errorf("not a bbolt database (%w): is db the right file?", err)
	}
	return err
}
