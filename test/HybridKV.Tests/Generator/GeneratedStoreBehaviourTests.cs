using System.Reflection;

namespace HybridKV.Tests.Generator;

/// <summary>
/// Snippets a user would write, run through the generator and the compiler with the strictest settings, then loaded
/// and run: the generated store must compile without a single warning and bind the class's callbacks (or the right
/// defaults) to the engine.
/// </summary>
[Trait("Category", "Generator")]
public sealed class GeneratedStoreBehaviourTests
{
    private const string ProbeSettings =
        "new StoreSettings { IndexBuckets = 64, PageSizeBits = 12, MemorySizeBytes = 1 << 16 }";

    [Fact]
    public void A_class_with_no_callbacks_gets_a_store_whose_defaults_copy_assign_and_store_the_rmw_input()
    {
        string source = $$"""
            using System.Collections.Generic;
            using HybridKV;

            namespace Users;

            /// <summary>Every callback is a default.</summary>
            [GeneratedStore(Key = typeof(long), Value = typeof(long))]
            public static partial class Plain
            {
            }

            /// <summary>Runs operations against the generated store.</summary>
            public static class Probe
            {
                /// <summary>Returns what each operation observed.</summary>
                public static string Run()
                {
                    using var store = new Plain.Store({{ProbeSettings}});
                    using Plain.Session session = store.NewSession();
                    var seen = new List<string>();
                    long output = 0;
                    seen.Add(session.Upsert(1, 10).ToString());
                    seen.Add($"{session.Read(1, ref output)}:{output}");
                    session.RMW(1, 5);
                    seen.Add($"{session.Read(1, ref output)}:{output}");
                    session.RMW(2, 7);
                    seen.Add($"{session.Read(2, ref output)}:{output}");
                    seen.Add(session.Delete(1).ToString());
                    seen.Add(session.Read(1, ref output).ToString());
                    seen.Add(session.UpsertAsync(3, 30).AsTask().GetAwaiter().GetResult().ToString());
                    ReadResult<long> read = session.ReadAsync(3).AsTask().GetAwaiter().GetResult();
                    seen.Add($"{read.Status}:{read.Output}");
                    seen.Add(session.RMWAsync(3, 33).AsTask().GetAwaiter().GetResult().ToString());
                    seen.Add(session.DeleteAsync(3).AsTask().GetAwaiter().GetResult().ToString());
                    seen.Add(session.CompletePending(wait: true).ToString());
                    seen.Add(session.LastSerialNo.ToString());
                    return string.Join(",", seen);
                }
            }
            """;

        Assert.Equal("Ok,Ok:10,Ok:5,Ok:7,Ok,NotFound,Ok,Ok:30,Ok,Ok,True,12", RunProbe(source));
    }

    [Fact]
    public void Struct_keys_and_distinct_input_and_output_types_bind_the_written_callbacks_and_derive_the_rest()
    {
        string source = $$"""
            using System.Collections.Generic;
            using HybridKV;

            namespace Users;

            /// <summary>A key struct: hashed and compared by its bytes.</summary>
            public readonly record struct Point(int X, int Y);

            /// <summary>A running sum and count.</summary>
            public struct Stats
            {
                /// <summary>The sum.</summary>
                public long Sum;

                /// <summary>How many values were added.</summary>
                public long Count;
            }

            /// <summary>Averages per point: RMW adds a sample, a read produces the mean.</summary>
            [GeneratedStore(Key = typeof(Point), Value = typeof(Stats), Input = typeof(long), Output = typeof(double),
                Context = typeof(string))]
            public static partial class Averages
            {
                private static void SingleReader(in Point key, in long input, in Stats value, ref double output) =>
                    output = value.Count == 0 ? double.NaN : (double)value.Sum / value.Count;

                private static void InPlaceUpdater(in Point key, in long input, ref Stats value)
                {
                    value.Sum += input;
                    value.Count++;
                }
            }

            /// <summary>Runs operations against the generated store.</summary>
            public static class Probe
            {
                /// <summary>Returns what each operation observed.</summary>
                public static string Run()
                {
                    using var store = new Averages.Store({{ProbeSettings}});
                    using var session = store.NewSession();
                    var seen = new List<string>();
                    session.RMW(new Point(1, 2), 10);
                    session.RMW(new Point(1, 2), 20, "with a context");
                    session.RMW(new Point(2, 1), 5);
                    double mean = 0;
                    seen.Add($"{session.Read(new Point(1, 2), ref mean)}:{mean}");
                    seen.Add($"{session.Read(new Point(2, 1), 0, ref mean, "ctx")}:{mean}");
                    seen.Add(session.Read(new Point(3, 3), ref mean).ToString());
                    session.Upsert(new Point(3, 3), new Stats { Sum = 9, Count = 3 });
                    seen.Add($"{session.Read(new Point(3, 3), ref mean)}:{mean}");
                    return string.Join(",", seen);
                }
            }
            """;

        Assert.Equal("Ok:15,Ok:5,NotFound,Ok:3", RunProbe(source));
    }

    [Fact]
    public void A_written_key_hash_and_equality_replace_the_generated_ones()
    {
        // Keys equal modulo 100: only the class's own KeyEquals and GetHashCode64 make 105 find 5.
        string source = $$"""
            using HybridKV;

            /// <summary>Keys that are equal modulo 100.</summary>
            [GeneratedStore(Key = typeof(int), Value = typeof(long))]
            internal static partial class Modular
            {
                private static long GetHashCode64(in int key) => KeyHashing.Mix(key % 100);

                private static bool KeyEquals(in int first, in int second) => first % 100 == second % 100;
            }

            /// <summary>Runs operations against the generated store.</summary>
            public static class Probe
            {
                /// <summary>Returns what a read of an equal key observed.</summary>
                public static string Run()
                {
                    using var store = new Modular.Store({{ProbeSettings}});
                    using var session = store.NewSession();
                    session.Upsert(5, 50);
                    long output = 0;
                    Status status = session.Read(105, ref output);
                    return $"{status}:{output}";
                }
            }
            """;

        Assert.Equal("Ok:50", RunProbe(source));
    }

    [Fact]
    public void A_store_nested_in_partial_types_with_custom_type_names_compiles_and_runs()
    {
        string source = $$"""
            using HybridKV;

            namespace Users.Deep
            {
                internal partial class Outer
                {
                    internal partial record Middle
                    {
                        /// <summary>Named types.</summary>
                        [GeneratedStore(Key = typeof(long), Value = typeof(int), StoreTypeName = "Db",
                            SessionTypeName = "Connection")]
                        internal sealed partial class Inner
                        {
                            private static void InPlaceUpdater(in long key, in int input, ref int value) =>
                                value += input * 2;
                        }
                    }
                }
            }

            /// <summary>Runs operations against the generated store.</summary>
            public static class Probe
            {
                /// <summary>Returns what the reads observed.</summary>
                public static string Run()
                {
                    using var store = new Users.Deep.Outer.Middle.Inner.Db({{ProbeSettings}});
                    using Users.Deep.Outer.Middle.Inner.Connection session = store.NewSession();
                    session.RMW(1, 3);
                    session.RMW(1, 4);
                    int output = 0;
                    session.Read(1, ref output);
                    return output.ToString(System.Globalization.CultureInfo.InvariantCulture);
                }
            }
            """;

        // InitialUpdater = InPlaceUpdater on 0: 0 + 3 * 2, then + 4 * 2.
        Assert.Equal("14", RunProbe(source));
    }

    [Fact]
    [Trait("Category", "VarLen")]
    public void Byte_sequence_keys_and_values_get_span_and_string_operations_and_sized_updaters()
    {
        string source = $$"""
            using System;
            using System.Buffers;
            using System.Collections.Generic;
            using System.Text;
            using HybridKV;

            namespace Users;

            /// <summary>Documents by name; an RMW with a defaulted (byte) input stores it.</summary>
            [GeneratedStore(Key = typeof(VarBytes), Value = typeof(VarBytes), Input = typeof(VarBytes),
                Output = typeof(VarBytesOutput))]
            public static partial class Documents
            {
            }

            /// <summary>Visit counters under string keys, as UTF-8: a byte value that grows by one byte per visit.</summary>
            [GeneratedStore(Key = typeof(VarBytes), Value = typeof(VarBytes), Input = typeof(byte),
                Output = typeof(int))]
            public static partial class Visits
            {
                private static void SingleReader(in VarBytes key, in byte input, in VarBytes value, ref int output) =>
                    output = value.Length;

                private static int GetInitialValueLength(in VarBytes key, in byte input) => 1;

                private static int GetUpdatedValueLength(in VarBytes key, in byte input, in VarBytes value) =>
                    value.Length + 1;

                private static void InitialUpdater(in VarBytes key, in byte input, ref VarBytes value) =>
                    value.AsSpan()[0] = input;

                private static void InPlaceUpdater(in VarBytes key, in byte input, ref VarBytes value)
                {
                    value.Length++;
                    value.AsSpan()[^1] = input;
                }

                private static void CopyUpdater(in VarBytes key, in byte input, in VarBytes oldValue, ref VarBytes newValue)
                {
                    oldValue.AsReadOnlySpan().CopyTo(newValue.AsSpan());
                    newValue.AsSpan()[^1] = input;
                }
            }

            /// <summary>Runs operations against the generated stores.</summary>
            public static class Probe
            {
                /// <summary>Returns what each operation observed.</summary>
                public static string Run()
                {
                    var seen = new List<string>();
                    using (var store = new Documents.Store({{ProbeSettings}}))
                    using (Documents.Session session = store.NewSession())
                    {
                        seen.Add(session.Upsert("a/1", "first"u8).ToString());
                        seen.Add(session.Upsert("a/1"u8, "second, longer"u8).ToString());
                        Span<byte> buffer = stackalloc byte[64];
                        seen.Add($"{session.Read("a/1", buffer, out int length)}:{Encoding.UTF8.GetString(buffer[..length])}");
                        seen.Add(session.RMW("a/2", "stored"u8).ToString());
                        session.Read("a/2"u8, out IMemoryOwner<byte>? value);
                        using (value)
                        {
                            seen.Add(Encoding.UTF8.GetString(value!.Memory.Span));
                        }

                        seen.Add(session.Delete("a/1").ToString());
                        seen.Add(session.Read("a/1", out _).ToString());
                        seen.Add(session.UpsertAsync("a/3"u8.ToArray(), "async"u8.ToArray()).AsTask().GetAwaiter().GetResult().ToString());
                        ReadResult<IMemoryOwner<byte>?> read = session.ReadAsync("a/3"u8.ToArray()).AsTask().GetAwaiter().GetResult();
                        using (read.Output)
                        {
                            seen.Add($"{read.Status}:{Encoding.UTF8.GetString(read.Output!.Memory.Span)}");
                        }
                    }

                    using (var store = new Visits.Store({{ProbeSettings}}))
                    using (Visits.Session session = store.NewSession())
                    {
                        for (int i = 0; i < 20; i++)
                        {
                            Status status = session.RMW("home"u8, (byte)i);
                            if (status == Status.Pending)
                            {
                                session.CompletePending(wait: true);
                            }
                        }

                        int visits = 0;
                        seen.Add($"{session.Read("home"u8, ref visits)}:{visits}");
                    }

                    return string.Join(",", seen);
                }
            }
            """;

        Assert.Equal("Ok,Ok,Ok:second, longer,Ok,stored,Ok,NotFound,Ok,Ok:async,Ok:20", RunProbe(source, stores: 2));
    }

    private static string RunProbe(string source, int stores = 1)
    {
        GeneratorHarness.Generated generated = GeneratorHarness.Run(source);
        Assert.Empty(generated.Diagnostics);
        Assert.Equal(stores, generated.Sources.Count);
        Assert.Empty(generated.CompilerProblems);
        Assembly assembly = generated.Load();
        MethodInfo run = assembly.GetTypes().Single(type => type.Name == "Probe").GetMethod("Run")!;
        return (string)run.Invoke(null, null)!;
    }
}
