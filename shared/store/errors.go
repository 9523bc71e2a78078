package store

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrNotFound is returned when an item does not exist in the caller's organisation.
var ErrNotFound = errors.New("store: not found")

// ErrConflict is returned when a conditional write lost to a concurrent or
// earlier write (a uniqueness guard, a state precondition).
var ErrConflict = errors.New("store: condition failed")

// IsConditionFailed reports whether err is a failed condition on a single-item write.
func IsConditionFailed(err error) bool {
	var ccf *ddbtypes.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// IsResourceNotFound reports whether err says the table does not exist.
func IsResourceNotFound(err error) bool {
	var rnf *ddbtypes.ResourceNotFoundException
	return errors.As(err, &rnf)
}

// CancelledConditions returns, for a cancelled transaction, the indexes of
// the items whose condition failed; ok is false for any other error.
func CancelledConditions(err error) (failed []int, ok bool) {
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil, false
	}
	for i, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			failed = append(failed, i)
		}
	}
	return failed, true
}
