using HybridKV.Extensions.Hosting;
using HybridKV.Extensions.Hosting.Tests.Support;

namespace HybridKV.Extensions.Hosting.Tests;

/// <summary>What logs, meters and messages call a store type.</summary>
[Trait("Category", "Hosting")]
public sealed class TypeDisplayNameTests
{
    [Fact]
    public void A_generic_store_shows_its_arguments_by_name_without_their_assemblies()
    {
        string name = TypeDisplayName.Of(typeof(HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions>));
        string nested = TypeDisplayName.Of(typeof(Dictionary<long, Outer<int>.Callbacks>));

        Assert.Equal("HybridKV.HybridKVStore<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty, VarBytesFunctions>", name);
        Assert.Equal("System.Collections.Generic.Dictionary<Int64, TypeDisplayNameTests.Outer<Int32>.Callbacks>", nested);
        Assert.DoesNotContain("Version=", name, StringComparison.Ordinal);
    }

    [Fact]
    public void A_store_type_that_is_not_generic_keeps_its_full_name()
    {
        Assert.Equal(typeof(Counters.Store).FullName, TypeDisplayName.Of(typeof(Counters.Store)));
        Assert.Equal("HybridKV.Extensions.Hosting.Tests.TypeDisplayNameTests.Outer<String[]>",
            TypeDisplayName.Of(typeof(Outer<string[]>)));
    }

    public sealed class Outer<T>
    {
        public struct Callbacks;
    }
}
