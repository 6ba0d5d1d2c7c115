using BenchmarkDotNet.Running;
using HybridKV.Benchmarks.LargerThanMemory;

// dotnet run -c Release --project bench/HybridKV.Benchmarks -- --filter '*'            (BenchmarkDotNet suites)
// dotnet run -c Release --project bench/HybridKV.Benchmarks -- larger-than-memory      (throughput on a file device)
// dotnet run -c Release --project bench/HybridKV.Benchmarks -- checkpoints             (throughput around checkpoints)
// dotnet run -c Release --project bench/HybridKV.Benchmarks -- ycsb --help             (YCSB with baselines)
// dotnet run -c Release --project bench/HybridKV.Benchmarks -- durable-writes [--concurrency 64] [--seconds 10]
//                                                             (acknowledged durable writes through the hosting package)
// dotnet run -c Release --project bench/HybridKV.Benchmarks -- device-probe [--depths 1,16,64] [--dir D]
//                                                             (raw random reads vs HybridKV's reads from storage)
// dotnet run -c Release --project bench/HybridKV.Benchmarks -- compaction-probe [--keys 1000000] [--range-mb 20]
//     [--rounds 60]                                           (one compaction's cost per record, alone on the machine)
// dotnet run -c Release --project bench/HybridKV.Benchmarks -- server [--pipeline 1,16] [--value-bytes 8,100]
//     [--tests set,get,incr] [--clients 50] [--requests N]    (HybridKV's RESP server vs Garnet and redis-server)
if (args.Length > 0 && args[0] == "ycsb")
{
    return HybridKV.Benchmarks.Ycsb.YcsbRunner.Run(args[1..]);
}

if (args.Length > 0 && args[0] == "server")
{
    return HybridKV.Benchmarks.Server.ServerBenchmarkRunner.Run(args[1..]);
}

if (args.Length > 0 && args[0] == "server-kestrel-host")
{
    return HybridKV.Benchmarks.Server.KestrelRespHost.Run(args[1..]);
}

if (args.Length > 0 && args[0] == "device-probe")
{
    return HybridKV.Benchmarks.Probes.DeviceProbe.Run(args[1..]);
}

if (args.Length > 0 && args[0] == "compaction-probe")
{
    return HybridKV.Benchmarks.Probes.CompactionProbe.Run(args[1..]);
}

if (args.Length > 0 && args[0] == "larger-than-memory")
{
    return LargerThanMemoryRunner.Run(args[1..]);
}

if (args.Length > 0 && args[0] == "durable-writes")
{
    return HybridKV.Benchmarks.Hosting.DurableWritesRunner.Run(args[1..]);
}

if (args.Length > 0 && args[0] == "checkpoints")
{
    return HybridKV.Benchmarks.Checkpoints.CheckpointRunner.Run(args[1..]);
}

BenchmarkSwitcher.FromAssembly(typeof(HybridKV.Benchmarks.InMemoryOperationsBenchmark).Assembly).Run(args);
return 0;
