package phases

import (
	"time"

	. "gopkg.in/check.v1"
)

type DPAEnforceSuite struct{}

var _ = Suite(&DPAEnforceSuite{})

// A DPA's enforce spec written back whole by a typed client (zero fields
// included) enforces only what is set, as in OADP: a zero value enforces
// nothing, but a pointer set to false does (OADP checks reflect's IsZero).
func (s *DPAEnforceSuite) TestZeroFieldsEnforceNothing(c *C) {
	e, err := decodeBackupEnforce([]byte(`{"ttl": "72h0m0s", "csiSnapshotTimeout": "0s", "metadata": {}, "hooks": {},
		"includedNamespaces": [], "snapshotVolumes": false, "defaultVolumesToFsBackup": null, "storageLocation": ""}`))
	c.Assert(err, IsNil)
	c.Check(e.Fields, DeepEquals, []string{"snapshotVolumes", "ttl"})
	c.Check(e.Spec.TTL.Duration, Equals, 72*time.Hour)

	// Set and unenforceable is still refused; an unknown field too.
	_, err = decodeBackupEnforce([]byte(`{"includedNamespaces": ["other"]}`))
	c.Check(err, ErrorMatches, `enforce.includedNamespaces can not be enforced: it would break tenant isolation`)
	_, err = decodeBackupEnforce([]byte(`{"tll": "1h"}`))
	c.Check(err, ErrorMatches, `.*unknown field "tll".*`)

	r, err := decodeRestoreEnforce([]byte(`{"restorePVs": true, "backupName": "", "existingResourcePolicy": ""}`))
	c.Assert(err, IsNil)
	c.Check(r.Fields, DeepEquals, []string{"restorePVs"})

	b, err := decodeBSLEnforce([]byte(`{"provider": "aws", "default": false, "config": {},
		"objectStorage": {"bucket": "corp", "prefix": "", "caCert": null}}`))
	c.Assert(err, IsNil)
	c.Check(b.Fields, DeepEquals, []string{"provider"})
	c.Check(b.ObjectStorageFields, DeepEquals, []string{"bucket"})
	b, err = decodeBSLEnforce([]byte(`{"objectStorage": {"bucket": ""}}`))
	c.Assert(err, IsNil)
	c.Check(b.Fields, HasLen, 0)
	c.Check(b.ObjectStorageFields, HasLen, 0)
}
