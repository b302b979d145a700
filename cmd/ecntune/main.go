package main

import (
	"fmt"
	"os"

	_ "go4.org/unsafe/assume-no-moving-gc"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ecntune:", err)
		os.Exit(1)
	}
}
