module kvm2conformance/sdk

go 1.19
