// Command kubectl-nac is nacflow's kubectl plugin: with it on PATH,
// `kubectl nac backup create b1 -n demo --wait` and the other verbs of
// cli work (the verbs and flags of OADP's `kubectl oadp nonadmin`).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nacflow/nacflow/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := cli.NewOptions(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if fd := int(os.Stdout.Fd()); term.IsTerminal(fd) {
		o.Terminal = true
		if w, _, err := term.GetSize(fd); err == nil {
			o.Width = w
		}
	}
	os.Exit(cli.ExitCode(ctx, o, os.Args[1:]))
}
