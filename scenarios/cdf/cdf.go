// Package cdf embeds the flow-size CDF files of this directory, so that
// commands can use the scenarios that reference them without the
// repository.
package cdf

import "embed"

// Files holds the *.txt CDF files of this directory, at the top level
// (e.g. "websearch.txt").
//
//go:embed *.txt
var Files embed.FS
