package placement.lab;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;

/**
 * A Table/SQL job, for placing what the SQL planner generates: datagen -> filter -> tumbling-window aggregate ->
 * blackhole. Its vertex names carry a counter that lives in the JobManager and changes with every submission
 * ({@code Calc[2]} then {@code Calc[7]}); its job vertex ids do not. Chaining is switched off through the job's
 * configuration, so each operator is a vertex of its own.
 *
 * <p>Arguments: {@code --rate} rows/s in total (default 200), {@code --parallelism} (default 2), {@code --devices}
 * (default 50), {@code --window-s} (default 2), {@code --job-name} (default "sql-readings").
 */
public final class SqlJob {
    public static void main(String[] args) {
        Params params = Params.fromArgs(args);
        Configuration conf = new Configuration();
        conf.setString("pipeline.operator-chaining.enabled", "false");
        conf.setString("parallelism.default", String.valueOf(params.getInt("parallelism", 2)));
        conf.setString("pipeline.name", params.get("job-name", "sql-readings"));
        conf.setString("pipeline.max-parallelism", "128");
        TableEnvironment tables = TableEnvironment.create(
                EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
        tables.executeSql("CREATE TABLE readings (device INT, temp DOUBLE, ts AS PROCTIME()) WITH ("
                + "'connector' = 'datagen', 'rows-per-second' = '" + params.getInt("rate", 200) + "', "
                + "'fields.device.min' = '1', 'fields.device.max' = '" + params.getInt("devices", 50) + "', "
                + "'fields.temp.min' = '0', 'fields.temp.max' = '100')");
        tables.executeSql("CREATE TABLE out_t (device INT, readings BIGINT, avg_temp DOUBLE) WITH ('connector' = 'blackhole')");
        tables.executeSql("INSERT INTO out_t SELECT device, COUNT(*), AVG(temp) FROM readings WHERE temp > 30 "
                + "GROUP BY device, TUMBLE(ts, INTERVAL '" + params.getInt("window-s", 2) + "' SECOND)");
    }
}
