using BenchmarkDotNet.Running;

// dotnet run -c Release --project bench/HybridKV.Benchmarks -- --filter '*'
BenchmarkSwitcher.FromAssembly(typeof(HybridKV.Benchmarks.InMemoryOperationsBenchmark).Assembly).Run(args);
