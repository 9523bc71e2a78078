package localproc

// CPRSpellings are CPR numbers as a path or a query may carry them (the
// redaction's spellings: shared/logs' tests). The whole-runtime panic tests
// of the devserver and localcloud send each.
var CPRSpellings = []string{"010190-1234", "0101901234", "010190%2D1234", "０１０１９０１２３４", "01.01.90-1234", "&#48;101901234"}

// PanicValue is what those tests' forced panics say: a value quoting stored
// data, as a bug's panic might (panic(fmt.Sprint(item))).
const PanicValue = "a person's item is not what the code expects: cpr 010190-1234"
