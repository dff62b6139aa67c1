package veleroqueue_test

import (
	"testing"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

// testScheme knows the kinds the turns read: NonAdminBackups and Velero
// Backups.
var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, velerov1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()
