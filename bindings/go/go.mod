module dptrain.org/dptrain

go 1.19
