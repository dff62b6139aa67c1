//go:build tools

// Package tools pins the commands this module builds: helm (bin/helm), which
// lints and renders charts/nacflow in `make test`.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
