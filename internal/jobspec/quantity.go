package jobspec

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ParseQuantity parses a positive resource quantity given as flag; "" is unset.
func ParseQuantity(flag, s string) (*resource.Quantity, error) {
	if s == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q: not a quantity (want e.g. 2, 500m, 4Gi)", flag, s)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("%s %q: must be positive", flag, s)
	}
	return &q, nil
}
