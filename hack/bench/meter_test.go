package main

import (
	"gopkg.in/check.v1"
)

type MeterSuite struct{}

var _ = check.Suite(&MeterSuite{})

// TestControllerWrites: the bench's Velero Backup and DownloadRequest
// patches and the API server's lease renewals are not the controller's;
// events are kept (apart in Figures).
func (s *MeterSuite) TestControllerWrites(c *check.C) {
	a := map[string]float64{"PATCH backups": 5, "PATCH downloadrequests": 2, "PUT leases": 1, "POST events": 3, "code=409": 1}
	b := map[string]float64{"PATCH backups": 105, "PATCH downloadrequests": 102, "PUT leases": 2, "POST events": 103,
		"PATCH nonadminbackups/status": 100, "POST downloadrequests": 100, "code=409": 4}
	d := controllerWriteDelta(a, b, 99)
	c.Check(d, check.DeepEquals, map[string]float64{"PATCH downloadrequests": 1, "POST events": 100,
		"PATCH nonadminbackups/status": 100, "POST downloadrequests": 100})
	m := &meter{}
	f := m.figures(snapshot{writes: a, reconciles: 10}, snapshot{writes: b, reconciles: 310, benchPatches: 99}, 100)
	c.Check(f.Writes, check.Equals, 201.0)
	c.Check(f.EventWrites, check.Equals, 100.0)
	c.Check(f.WritesPerCompletion, check.Equals, 2.01)
	c.Check(f.WritesPerCompletionInclEvents, check.Equals, 3.01)
	c.Check(f.ReconcilesPerCompletion, check.Equals, 3.0)
}

// TestChangedFields counts the NABs that changed and which fields.
func (s *MeterSuite) TestChangedFields(c *check.C) {
	a := nabFields{
		"t/a": {"status.queueInfo": []byte(`{"p":2}`), "spec": []byte(`{}`)},
		"t/b": {"status.queueInfo": []byte(`{"p":3}`), "spec": []byte(`{}`)},
	}
	b := nabFields{
		"t/a": {"status.queueInfo": []byte(`{ "p": 2 }`), "spec": []byte(`{}`)},
		"t/b": {"status.queueInfo": []byte(`{"p":2}`), "status.phase": []byte(`"Created"`), "spec": []byte(`{}`)},
		"t/c": {"spec": []byte(`{}`)},
	}
	n, fields := changedFields(a, b)
	c.Check(n, check.Equals, 2)
	c.Check(fields, check.DeepEquals, map[string]int{"status.queueInfo": 1, "status.phase": 1, "spec": 1})
}
