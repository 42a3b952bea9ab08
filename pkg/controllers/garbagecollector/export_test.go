package garbagecollector

// Tracked returns how many objects c's monitors keep, and how many nodes
// its graph has.
func (c *Collector) Tracked() (objects, nodes int) {
	c.mu.RLock()
	for _, m := range c.monitors {
		o, _ := m.store.len()
		objects += o
	}
	c.mu.RUnlock()
	return objects, c.graph.len()
}

// Synced reports whether c watches some resources and every one of its
// monitors has listed its resource once.
func (c *Collector) Synced() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.monitors) == 0 {
		return false
	}
	for _, m := range c.monitors {
		if !m.store.hasSynced() {
			return false
		}
	}
	return true
}
