module dptrain.org/samples/train

go 1.19

require dptrain.org/dptrain v0.0.0

replace dptrain.org/dptrain => ../../bindings/go
