package portfolio

// Decimal is an exact positive decimal number, as a rate is given: Coef ×
// 10^-Scale. It encodes as a JSON number in plain decimal notation with no
// trailing zeros after the point (5.1234, 0.00012, 5).
type Decimal struct {
	Coef  uint64
	Scale uint8
}
