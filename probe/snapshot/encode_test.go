package snapshot

// encode is Set followed by Next: the one-receiver shorthand the tests
// use.
func (s *Sender[S]) encode(dst []byte, receiver int, state *S) []byte {
	s.Set(state)
	return s.Next(dst, receiver)
}
