// Command clidocs writes docs/cli.md, the kubectl-nac command reference,
// to standard output (make docs).
package main

import (
	"fmt"
	"os"

	"github.com/nacflow/nacflow/cli"
)

func main() {
	page, err := cli.CLIReference()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clidocs:", err)
		os.Exit(1)
	}
	fmt.Print(page)
}
