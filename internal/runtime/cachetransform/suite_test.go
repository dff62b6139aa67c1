package cachetransform_test

import (
	"testing"

	. "gopkg.in/check.v1"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }
