using System.IO.Compression;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Generator;

/// <summary>
/// What a user gets from NuGet: the package is packed from a copy of the sources, and a new project that references
/// only that .nupkg (no project reference, no analyzer reference) declares a store, builds without warnings with
/// warnings as errors, and runs.
/// </summary>
[Trait("Category", "Generator")]
[Collection(nameof(ProcessWideTests))]
public sealed class PackageTests
{
    private const string Version = "0.0.0-packtest";
    private static readonly TimeSpan CommandTimeout = TimeSpan.FromMinutes(5);

    [Fact]
    public async Task A_project_referencing_only_the_package_gets_the_generated_store()
    {
        using var temp = new TempDirectory();
        string sources = CopySources(temp.NewSubdirectory());
        string feed = temp.NewSubdirectory();
        await DotnetCli.RunAsync(sources, CommandTimeout, "pack", Path.Combine("src", "HybridKV", "HybridKV.csproj"),
            "-c", "Release", "-o", feed, $"-p:Version={Version}", "--disable-build-servers");

        string package = Path.Combine(feed, $"HybridKV.{Version}.nupkg");
        using (ZipArchive archive = ZipFile.OpenRead(package))
        {
            string[] entries = [.. archive.Entries.Select(entry => entry.FullName)];
            Assert.Contains("analyzers/dotnet/cs/HybridKV.Generator.dll", entries);
            Assert.Contains("lib/net10.0/HybridKV.dll", entries);
            Assert.DoesNotContain(entries, entry => entry.StartsWith("lib/", StringComparison.Ordinal) &&
                entry.EndsWith("HybridKV.Generator.dll", StringComparison.Ordinal));
            Assert.Contains("README.md", entries);

            // What nuget.org shows: the readme, the license, where the sources are kept.
            using var nuspec = new StreamReader(archive.GetEntry("HybridKV.nuspec")!.Open());
            string manifest = nuspec.ReadToEnd();
            Assert.Contains("<readme>README.md</readme>", manifest, StringComparison.Ordinal);
            Assert.Contains("<license type=\"expression\">MIT</license>", manifest, StringComparison.Ordinal);
            Assert.Contains("<repository type=\"git\"", manifest, StringComparison.Ordinal);
        }

        // Symbols beside the package.
        Assert.True(File.Exists(Path.Combine(feed, $"HybridKV.{Version}.snupkg")), "no symbol package");

        string consumer = temp.NewSubdirectory();
        WriteConsumer(consumer, feed, Path.Combine(temp.Path, "packages"));
        string output = await DotnetCli.RunAsync(consumer, CommandTimeout, "run", "-c", "Release",
            "--disable-build-servers");

        Assert.Contains("count=12 status=NotFound", output, StringComparison.Ordinal);
    }

    /// <summary>The files packing needs, without build output, so the test never writes into the repository.</summary>
    private static string CopySources(string destination)
    {
        string root = RepositoryPaths.Root;
        foreach (string file in new[] { "Directory.Build.props", "Directory.Packages.props", "nuget.config", "global.json" })
        {
            if (File.Exists(Path.Combine(root, file)))
            {
                File.Copy(Path.Combine(root, file), Path.Combine(destination, file));
            }
        }

        foreach (string project in new[] { "HybridKV", "HybridKV.Generator" })
        {
            CopyTree(Path.Combine(root, "src", project), Path.Combine(destination, "src", project));
        }

        return destination;
    }

    private static void CopyTree(string source, string destination)
    {
        Directory.CreateDirectory(destination);
        foreach (string file in Directory.GetFiles(source))
        {
            File.Copy(file, Path.Combine(destination, Path.GetFileName(file)));
        }

        foreach (string directory in Directory.GetDirectories(source))
        {
            string name = Path.GetFileName(directory);
            if (name is not ("bin" or "obj"))
            {
                CopyTree(directory, Path.Combine(destination, name));
            }
        }
    }

    private static void WriteConsumer(string directory, string feed, string packages)
    {
        // The machine's package sources stay (the package's own dependencies come from there); the packages folder
        // is private, so that the test package never lands in the user's cache.
        File.WriteAllText(Path.Combine(directory, "nuget.config"), $"""
            <?xml version="1.0" encoding="utf-8"?>
            <configuration>
              <config>
                <add key="globalPackagesFolder" value="{packages}" />
              </config>
              <packageSources>
                <add key="packtest" value="{feed}" />
              </packageSources>
            </configuration>
            """);
        // Empty MSBuild imports stop the search upwards, so the repository's own build settings do not apply here.
        foreach (string file in new[] { "Directory.Build.props", "Directory.Build.targets", "Directory.Packages.props" })
        {
            File.WriteAllText(Path.Combine(directory, file), "<Project />");
        }

        File.WriteAllText(Path.Combine(directory, "Consumer.csproj"), $"""
            <Project Sdk="Microsoft.NET.Sdk">
              <PropertyGroup>
                <OutputType>Exe</OutputType>
                <TargetFramework>net10.0</TargetFramework>
                <Nullable>enable</Nullable>
                <ImplicitUsings>enable</ImplicitUsings>
                <TreatWarningsAsErrors>true</TreatWarningsAsErrors>
                <GenerateDocumentationFile>true</GenerateDocumentationFile>
                <NoWarn>$(NoWarn);CS1591</NoWarn>
              </PropertyGroup>
              <ItemGroup>
                <PackageReference Include="HybridKV" Version="{Version}" />
              </ItemGroup>
            </Project>
            """);
        File.WriteAllText(Path.Combine(directory, "Program.cs"), """
            using HybridKV;

            using var store = new Tally.Store(new StoreSettings { IndexBuckets = 64, MemorySizeBytes = 1 << 24 });
            using Tally.Session session = store.NewSession();
            session.RMW("apples".GetHashCode(StringComparison.Ordinal), 5);
            session.RMW("apples".GetHashCode(StringComparison.Ordinal), 7);
            int count = 0;
            session.Read("apples".GetHashCode(StringComparison.Ordinal), ref count);
            Status missing = session.Read(-1, ref count);
            Console.WriteLine($"count={count} status={missing}");

            [GeneratedStore(Key = typeof(int), Value = typeof(int))]
            internal static partial class Tally
            {
                private static void InPlaceUpdater(in int key, in int input, ref int value) =>
                    Interlocked.Add(ref value, input);
            }
            """);
    }
}
