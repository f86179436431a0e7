package chart

// The colors the contrast test holds.
const (
	Background = background
	TextColor  = textColor
	MutedText  = mutedText
	GridColor  = gridColor
)
