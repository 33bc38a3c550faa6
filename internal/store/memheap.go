package store

import "container/heap"

// indexedHeap is a min-heap of items ordered by less, for the memory
// store's expiry and due orders. When at is set, it keeps each item's
// position in the int at returns (-1 when the item is not in the heap), so
// an item can be fixed or removed in place.
type indexedHeap[T any] struct {
	items []T
	less  func(a, b T) bool
	at    func(T) *int
}

// place puts e in the heap, or fixes its place, when in is true, and takes
// it out otherwise. It needs at.
func (h *indexedHeap[T]) place(e T, in bool) {
	i := *h.at(e)
	switch {
	case in && i >= 0:
		heap.Fix(h, i)
	case in:
		heap.Push(h, e)
	case i >= 0:
		heap.Remove(h, i)
	}
}

func (h *indexedHeap[T]) Len() int           { return len(h.items) }
func (h *indexedHeap[T]) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }

func (h *indexedHeap[T]) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.setAt(i)
	h.setAt(j)
}

func (h *indexedHeap[T]) setAt(i int) {
	if h.at != nil {
		*h.at(h.items[i]) = i
	}
}

func (h *indexedHeap[T]) Push(x any) {
	h.items = append(h.items, x.(T))
	h.setAt(len(h.items) - 1)
}

func (h *indexedHeap[T]) Pop() any {
	last := len(h.items) - 1
	e := h.items[last]
	var zero T
	h.items[last] = zero
	h.items = h.items[:last]
	if h.at != nil {
		*h.at(e) = -1
	}
	return e
}
