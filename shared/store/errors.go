package store

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apperr"
)

// ErrNotFound is returned when an item does not exist in the caller's
// organisation. It is apperr.NotFound for errors.Is (the edge's single
// read answers it 404 without linking the store), and no *apperr.Error.
var ErrNotFound error = notFound{}

type notFound struct{}

func (notFound) Error() string { return "store: not found" }

// Is makes ErrNotFound apperr.NotFound.
func (notFound) Is(target error) bool { return target == apperr.NotFound }

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

// ErrTxConflict is returned when a transaction lost to a concurrent one on
// the same items (DynamoDB's TransactionConflict): nothing was written, and
// the same request may succeed when sent again.
// It is apperr.Unavailable for errors.Is (Classify).
var ErrTxConflict error = &classified{kind: apperr.Unavailable, err: errors.New("store: a concurrent transaction on the same items")}

// isTxConflict reports whether a cancelled transaction lost to a
// concurrent one.
func isTxConflict(err error) bool {
	var tce *ddbtypes.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "TransactionConflict" {
				return true
			}
		}
	}
	var tc *ddbtypes.TransactionConflictException
	return errors.As(err, &tc)
}

// cancelled reads a cancelled transaction's reasons; nil for any other
// error, or a cancellation that names no item.
func cancelled(err error) *TxFailed {
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	f := &TxFailed{}
	for i, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			f.Failed = append(f.Failed, i)
			if len(r.Item) > 0 {
				if f.Items == nil {
					f.Items = map[int]map[string]ddbtypes.AttributeValue{}
				}
				f.Items[i] = r.Item
			}
		case "TransactionConflict":
			f.Conflicted = append(f.Conflicted, i)
		}
	}
	if len(f.Failed) == 0 && len(f.Conflicted) == 0 {
		return nil
	}
	return f
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
