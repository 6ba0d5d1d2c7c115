using CounterService;
using HybridKV.Extensions.Hosting;
using Pool = HybridKV.Extensions.Hosting.HybridKVSessionPool<CounterService.Counters.Store, CounterService.Counters.Session>;

// A counter service: POST /counters/{id}?by=n adds n and answers once the increment is durable; GET reads it.
// The store's options come from the "HybridKV" section of appsettings.json (its directory at least).
WebApplicationBuilder builder = WebApplication.CreateBuilder(args);
builder.Services.AddHybridKV<Counters.Store, Counters.Session>();
builder.Services.AddHealthChecks().AddHybridKV<Counters.Store, Counters.Session>();
WebApplication app = builder.Build();

app.MapPost("/counters/{id:long}", async (long id, long? by, Pool pool, CancellationToken cancellationToken) =>
{
    // Acknowledged only once a checkpoint holds the increment; concurrent requests share that checkpoint.
    await pool.RunDurableAsync(async (session, token) => await session.RMWAsync(id, by ?? 1, cancellationToken: token),
        cancellationToken);
    return Results.NoContent();
});

app.MapGet("/counters/{id:long}", async (long id, Pool pool, CancellationToken cancellationToken) =>
{
    long count = await pool.RunAsync(async (session, token) =>
        (await session.ReadAsync(id, cancellationToken: token)).Output, cancellationToken);
    return Results.Ok(new CounterValue(id, count));
});

app.MapHealthChecks("/health");
app.Run();

/// <summary>A counter and its count, as GET returns it.</summary>
internal sealed record CounterValue(long Id, long Count);

/// <summary>The entry point, named for WebApplicationFactory in the tests.</summary>
public partial class Program;
