namespace HybridKV.Tests.Support;

/// <summary>
/// Scales the work of stress and property tests: <c>HYBRIDKV_TEST_SCALE=10</c> runs ten times the default, for soak
/// runs; the default keeps the whole suite within the README's time budget.
/// </summary>
public static class TestScale
{
    public static int Factor { get; } =
        int.TryParse(Environment.GetEnvironmentVariable("HYBRIDKV_TEST_SCALE"), out int factor) && factor > 0
            ? factor
            : 1;
}
