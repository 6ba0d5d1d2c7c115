namespace HybridKV.Tests.Support;

/// <summary>
/// The collection of tests that observe the whole process (open file descriptors, native memory). It runs alone, so
/// that other tests cannot change what these count.
/// </summary>
[CollectionDefinition(nameof(ProcessWideTests), DisableParallelization = true)]
public sealed class ProcessWideTests;
