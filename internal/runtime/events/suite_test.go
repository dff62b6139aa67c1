package events_test

import (
	"testing"
	"time"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

// testScheme knows the NAC kinds events are recorded on.
var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// eventually polls check every 100ms until it returns true or timeout
// passes; then it fails the test with check's last message.
func eventually(c *C, timeout time.Duration, check func() (bool, string)) {
	deadline := time.Now().Add(timeout)
	var msg string
	for {
		var ok bool
		if ok, msg = check(); ok {
			return
		}
		if time.Now().After(deadline) {
			c.Fatalf("not true after %s: %s", timeout, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
