module kvm2conformance/gotemplate

go 1.19

require kvm2conformance/sdk v0.0.0

replace kvm2conformance/sdk => ../../conformance/go
