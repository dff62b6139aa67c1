package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// TestSizesNeverStick: a NonAdminBackup whose longest name is cut at a dot
// for its Velero Backup's name gets a Velero Backup of a valid name; one
// whose labels, copied to the Velero Backup as an annotation, would pass the
// API server's limit is refused at validation, naming the field and the
// limit, with nothing created. Neither sits at phase New.
func (s *ControllerSuite) TestSizesNeverStick(c *C) {
	ctx := context.Background()
	ns := createNamespace(c, "size")
	// The derived name keeps 25 characters for namespace and name; this
	// name's cut ends at its dot.
	keep := 25 - len(ns)
	name := strings.Repeat("n", keep-1) + "." + strings.Repeat("m", 253-keep)
	c.Assert(len(name), Equals, 253)
	long := newNAB(ns, name, velerov1.BackupSpec{})
	c.Assert(testClient.Create(ctx, long), IsNil)
	var veleroName string
	eventually(c, 20*time.Second, func() (bool, string) {
		got := getNAB(c, long)
		if len(veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID))) == 1 {
			veleroName = veleroBackupsOf(c, s.oadp, v1alpha1.NACUUIDOf(got.UID))[0].Name
			return true, ""
		}
		return false, fmt.Sprintf("phase %q, plan %+v", got.Status.Phase, got.Status.Plan)
	})
	c.Check(validation.IsDNS1123Subdomain(veleroName), HasLen, 0, Commentf("%s", veleroName))

	labels := map[string]string{}
	for i := range 1200 {
		labels[fmt.Sprintf("example.com/label-%04d-%s", i, strings.Repeat("k", 40))] = strings.Repeat("v", 63)
	}
	heavy := newNAB(ns, "heavy", velerov1.BackupSpec{})
	heavy.Labels = labels
	c.Assert(testClient.Create(ctx, heavy), IsNil)
	msg := refusedWithStatus(c, heavy, "labels over the limit")
	c.Check(msg, Matches, `metadata\.labels: \d+ bytes as JSON, at most 65536: they are copied to the Velero Backup's annotation `+v1alpha1.NabOriginLabelsAnnotation+` .*`)
	nothingCreatedFor(c, s.oadp, v1alpha1.NACUUIDOf(getNAB(c, heavy).UID), "labels over the limit")
}
