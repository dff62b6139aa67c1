package gctune

// WithFileResident returns t reading the binary's resident bytes from read
// instead of /proc/self/status.
func WithFileResident(t Tuner, read func() (int64, bool)) Tuner {
	t.fileResident = read
	return t
}

// ParseRssFile is parseRssFile, for the tests.
var ParseRssFile = parseRssFile
