package phases_test

import (
	"context"
	"encoding/json"
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

// FuzzValidateBackupSpec: any backupSpec (as JSON) and any admin enforce
// object validate or are refused cleanly, never panic, and an accepted spec
// never names another namespace, excluded namespaces or cluster resources.
func FuzzValidateBackupSpec(f *testing.F) {
	f.Add(`{"includedNamespaces":["team"],"ttl":"1h"}`, `{"ttl":"72h","snapshotVolumes":false}`)
	f.Add(`{"includedNamespaces":["other"]}`, `{}`)
	f.Add(`{"labelSelector":{"matchLabels":{"a":"b"}}}`, `{"labelSelector":{"matchLabels":{"c":"d"}}}`)
	f.Add(`{"includeClusterResources":true}`, `{"includedNamespaces":["x"]}`)
	f.Add(`{"snapshotVolumes":true}`, `{"snapshotVolumes":false,"excludedResources":[]}`)
	f.Fuzz(func(t *testing.T, userJSON, enforceJSON string) {
		var spec velerov1.BackupSpec
		if json.Unmarshal([]byte(userJSON), &spec) != nil {
			return
		}
		fn := phases.AsFunc(&phases.ValidateBackupSpec{})
		args := fn.NewArgs()
		if engine.DecodeArgs(map[string]any{"enforce": json.RawMessage(enforceJSON)}, args) != nil {
			return // a blueprint that does not validate is never used
		}
		nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "team"}, Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &spec}}
		if spec.StorageLocation != "" {
			return // needs a cluster to look the location up
		}
		if _, err := fn.Run(context.Background(), &engine.Operation{Object: nab}, args); err != nil {
			return
		}
		eff := nab.Status.VeleroBackup.Spec
		for _, ns := range eff.IncludedNamespaces {
			if ns != "team" {
				t.Fatalf("accepted a backup of namespace %q", ns)
			}
		}
		if len(eff.ExcludedNamespaces) > 0 || (eff.IncludeClusterResources != nil && *eff.IncludeClusterResources) || len(eff.IncludedClusterScopedResources) > 0 {
			t.Fatalf("accepted a tenancy-breaking spec: %+v", eff)
		}
	})
}
