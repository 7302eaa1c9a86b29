package engine

// SetListAllFrom sets listAllFrom, the number of rules from which an operation reads
// every rule's revisions with one list, until the returned restore is called.
func SetListAllFrom(n int) (restore func()) {
	old := listAllFrom.Swap(int64(n))
	return func() { listAllFrom.Store(old) }
}

// SetPublishEvery sets publishEvery, how many rules of a first start are published
// together, until the returned restore is called.
func SetPublishEvery(n int) (restore func()) {
	old := publishEvery.Swap(int64(n))
	return func() { publishEvery.Store(old) }
}

// HoldFirstRevisions makes a controller of opts that never stores a rule's first
// revision by itself (its rollouts never find it idle): only a reload stores one.
func HoldFirstRevisions(opts *Options) { opts.holdFirstRevisions = true }
