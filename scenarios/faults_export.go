package scenarios

// FaultFields returns the fields a fault type accepts (nil for an unknown
// type), in the order the documentation shows them.
func FaultFields(typ string) []string {
	fs, ok := faultSpecs[typ]
	if !ok {
		return nil
	}
	return fs.fields()
}
