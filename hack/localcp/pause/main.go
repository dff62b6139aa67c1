// Command pause is the sandbox ("pause") container of the local node's Pods:
// it holds the Pod's namespaces open until it is told to stop. The local node
// has no registry to pull registry.k8s.io/pause from, so localcp builds this
// program into an image and imports it into the node's containerd. Like
// Kubernetes' own pause (build/pause/linux/pause.c) it exits 0 on SIGINT or
// SIGTERM and, being PID 1 of a Pod that shares its PID namespace, reaps the
// children re-parented to it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
