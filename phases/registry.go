// Package phases holds nacflow's phase functions, one file each, and the
// registry that gives them to the engine (DESIGN.md §4). Functions are
// stateless: their clients are injected by New, never kept in globals.
package phases

import (
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/engine"
)

// Clients are what phase functions talk to the cluster with.
type Clients struct {
	// Client reads through the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads straight from the API server, for the rare reads that
	// must not see a stale cache (adopting an object after AlreadyExists).
	APIReader client.Reader
	// Recorder emits the events of Notify (nil: none).
	Recorder record.EventRecorder
	// Queue estimates queue positions (nil: CreateVeleroBackup sets none).
	Queue engine.QueueEstimator

	// recent remembers what these functions created (set by New).
	recent *recentCreates
}

// Options are controller settings some phase functions follow.
type Options struct {
	// RequireApprovalForBSL is --require-approval-for-bsl: tenants' storage
	// locations wait for an admin's approval.
	RequireApprovalForBSL bool
}

// New returns the registry of every phase function, bound to c and o. It
// returns an error only if two functions share a name (a programming error).
func New(c Clients, o Options) (*engine.Registry, error) {
	c.recent = newRecentCreates()
	return engine.NewRegistry(
		&ValidateBackupSpec{clients: c},
		&CreateVeleroBackup{clients: c},
		&WaitFor{clients: c},
		&SyncStatus{clients: c},
		&MarkDeleting{},
		&CreateDeleteBackupRequest{clients: c},
		&DeleteObjects{clients: c},
		&ValidateRestoreSpec{clients: c},
		&CreateVeleroRestore{clients: c},
		&DeleteRestoresOfBackup{clients: c},
		&ValidateBSLSpec{clients: c},
		&RequestApproval{clients: c, required: o.RequireApprovalForBSL},
		&CopySecret{clients: c},
		&CreateVeleroBSL{clients: c},
		&DeleteBackupsUsingBSL{clients: c},
		&AdoptVeleroBackup{clients: c},
		&Notify{clients: c},
		&LimitActiveOperations{clients: c},
	)
}
