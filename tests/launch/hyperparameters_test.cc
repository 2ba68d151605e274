// SageMaker hyperparameters as the SDK really writes them -> `ctrain train` flags
// (launch/hyperparameters.h): JSON-encoded values (framework estimators), raw str(v) values
// (a plain Estimator), platform keys skipped and counted, and the refusals.
#include "ctrain/launch/hyperparameters.h"

#include <nlohmann/json.hpp>

#include "ctrain/job/option_schema.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ctrain::launch {
namespace {

using Args = std::vector<std::string>;

StatusOr<MappedHyperparameters> Map(const Hyperparameters& hp) { return MapHyperparameters(hp, "/ml/hp.json"); }

std::string Error(const Hyperparameters& hp) {
  StatusOr<MappedHyperparameters> m = Map(hp);
  return m.ok() ? "(mapped)" : m.status().ToString();
}

// What EstimatorBase._json_encode_hyperparameters (json.dumps per value) makes of
// {"epochs": 3, "optimizer": "adam", "learning_rate": 0.001, "deep_layers": [400, 400],
//  "batch_norm": True, "keep_best": False}.
TEST(MapHyperparameters, JsonEncodedValuesOfAFrameworkEstimator) {
  StatusOr<MappedHyperparameters> m =
      Map({{"epochs", "3"}, {"optimizer", "\"adam\""}, {"learning_rate", "0.001"}, {"deep_layers", "[400, 400]"},
           {"batch_norm", "true"}, {"keep_best", "false"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->train_args, (Args{"--epochs=3", "--optimizer=adam", "--learning-rate=0.001", "--deep-layers=400,400",
                                 "--batch-norm=true", "--keep-best=false"}));
  EXPECT_EQ(m->epochs, 3);
  EXPECT_EQ(m->skipped_platform_keys, 0);
  EXPECT_EQ(m->decoded_json,
            R"({"epochs":3,"optimizer":"adam","learning_rate":0.001,"deep_layers":[400,400],"batch_norm":true,)"
            R"("keep_best":false})");
}

TEST(MapHyperparameters, NumbersKeepTheirTextAndStringsLoseTheirQuotes) {
  StatusOr<MappedHyperparameters> m =
      Map({{"learning_rate", " 1e-3 "}, {"batch_size", "\"512\""}, {"cache", "\"/tmp/a b\""}, {"epochs", "\"2\""}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // Typed through the schema: the flags carry the values' canonical texts.
  EXPECT_EQ(m->train_args, (Args{"--learning-rate=0.001", "--batch-size=512", "--cache=/tmp/a b", "--epochs=2"}));
  EXPECT_EQ(m->values.dump(), R"({"learning_rate":0.001,"batch_size":512,"cache":"/tmp/a b","epochs":2})");
  EXPECT_EQ(m->epochs, 2);
  // A JSON string holding a list is that string: the flag's own list form.
  m = Map({{"deep_layers", "\"64,32\""}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->train_args, (Args{"--deep-layers=64,32"}));
}

// A plain Estimator (bring-your-own image, no source_dir) sends str(v): not JSON for
// strings and booleans; the raw text is kept, as the toolkit keeps it.
TEST(MapHyperparameters, RawUnencodedValuesAreKept) {
  StatusOr<MappedHyperparameters> m = Map({{"optimizer", "adam"}, {"batch_norm", "True"}, {"deep_layers", "400,400"},
                                           {"learning_rate", "0.001"}, {"cache", "memory"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->train_args, (Args{"--optimizer=adam", "--batch-norm=true", "--deep-layers=400,400",
                                 "--learning-rate=0.001", "--cache=memory"}));
  EXPECT_EQ(m->decoded_json,
            R"({"optimizer":"adam","batch_norm":"True","deep_layers":"400,400","learning_rate":0.001,"cache":"memory"})");
}

TEST(MapHyperparameters, ListsForListFlags) {
  StatusOr<MappedHyperparameters> m =
      Map({{"deep_layers", "[64, 32, 16]"}, {"ps", "[\"h1:7000\", \"h2:7001\"]"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->train_args, (Args{"--deep-layers=64,32,16", "--ps=h1:7000", "--ps=h2:7001"}));
}

TEST(MapHyperparameters, PlatformKeysAreSkippedCountedAndNamed) {
  StatusOr<MappedHyperparameters> m =
      Map({{"sagemaker_job_name", "\"j-1\""}, {"epochs", "2"}, {"_tuning_objective_metric", "\"validation:auc\""},
           {"sagemaker_region", "\"us-east-1\""}, {"sagemaker_estimator_class_name", "\"Estimator\""},
           {"_some_new_service_key", "{\"a\": 1}"},  // never refused, not even an object
           {"default_user_module_name", "\"train\""}});  // the training toolkit's
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->train_args, (Args{"--epochs=2"}));
  EXPECT_EQ(m->skipped_platform_keys, 6);
  EXPECT_EQ(m->skipped_keys, (Args{"sagemaker_job_name", "_tuning_objective_metric", "sagemaker_region",
                                   "sagemaker_estimator_class_name", "_some_new_service_key",
                                   "default_user_module_name"}));
  // The decoded object keeps every key, as the toolkit's read_hyperparameters() does.
  EXPECT_EQ(m->decoded_json,
            R"({"sagemaker_job_name":"j-1","epochs":2,"_tuning_objective_metric":"validation:auc",)"
            R"("sagemaker_region":"us-east-1","sagemaker_estimator_class_name":"Estimator",)"
            R"("_some_new_service_key":{"a":1},"default_user_module_name":"train"})");
}

TEST(MapHyperparameters, AUserScriptsKeysAreItsOwnNotCtrainFlags) {
  // sagemaker_program (a framework estimator's entry_point) makes the job a user script's: its keys
  // are passed on, never mapped or refused (lr is no ctrain flag); data_group is still read.
  StatusOr<MappedHyperparameters> m =
      Map({{"sagemaker_program", "\"train.py\""}, {"sagemaker_submit_directory", "\"s3://b/src.tar.gz\""},
           {"lr", "0.01"}, {"layers", "[64, 32]"}, {"data_group", "\"cpu\""}, {"sagemaker_mpi_enabled", "true"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->user_script);
  EXPECT_EQ(m->program, "train.py");
  EXPECT_EQ(m->submit_directory, "s3://b/src.tar.gz");
  EXPECT_EQ(m->train_args, Args{});
  EXPECT_EQ(m->data_group, "cpu");
  EXPECT_EQ(m->user.dump(), R"({"lr":0.01,"layers":[64,32],"data_group":"cpu"})");
  // --entry-point does the same without sagemaker_program.
  StatusOr<MappedHyperparameters> e = MapHyperparameters({{"lr", "0.01"}}, "hyperparameters.json", true);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->user_script);
  EXPECT_EQ(e->user.dump(), R"({"lr":0.01})");
  // Without either, lr is refused as before.
  EXPECT_FALSE(Map({{"lr", "0.01"}}).ok());
  EXPECT_NE(Map({{"sagemaker_program", "3"}}).status().ToString().find(
                "hyperparameter \"sagemaker_program\" (value 3) must be a non-empty string"),
            std::string::npos);
}

// The SDK's distribution keys (Framework._distribution_configuration, JSON-encoded): what the
// launcher runs is accepted, the rest refused by name (tests/python/test_sagemaker_contract.py
// makes them with the SDK itself).
TEST(MapHyperparameters, DistributionKeysAreReadNotSkipped) {
  StatusOr<MappedHyperparameters> m = Map({{"sagemaker_mpi_enabled", "true"},
                                           {"sagemaker_mpi_num_of_processes_per_host", "1"},
                                           {"sagemaker_mpi_custom_mpi_options", "\"\""},
                                           {"sagemaker_parameter_server_enabled", "false"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->skipped_platform_keys, 4);
  EXPECT_EQ(m->processes_per_host, 1);
  EXPECT_TRUE(m->custom_mpi_options.empty());
  // As the SDK writes them (JSON-encoded) and as a plain Estimator does (text).
  for (const char* n : {"2", "\"2\""}) {
    m = Map({{"sagemaker_mpi_num_of_processes_per_host", n},
             {"sagemaker_mpi_custom_mpi_options", "\"-x NCCL_DEBUG=INFO  --mca btl_tcp_if_include lo\""}});
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->processes_per_host, 2);
    EXPECT_EQ(m->custom_mpi_options,
              (std::vector<std::string>{"-x", "NCCL_DEBUG=INFO", "--mca", "btl_tcp_if_include", "lo"}));
  }
  for (const char* bad : {"0", "-1", "2.5", "\"two\"", "[2]", "5000"})
    EXPECT_NE(Error({{"sagemaker_mpi_num_of_processes_per_host", bad}})
                  .find("): distribution mpi processes_per_host must be a whole number in [1, 4096]"),
              std::string::npos)
        << bad;
  EXPECT_NE(Error({{"sagemaker_mpi_custom_mpi_options", "[1]"}}).find("custom_mpi_options is a string"),
            std::string::npos);
  EXPECT_FALSE(m->parameter_server);
  m = Map({{"sagemaker_parameter_server_enabled", "true"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->parameter_server);
  EXPECT_NE(Error({{"sagemaker_distributed_dataparallel_enabled", "True"}})
                .find("\"sagemaker_distributed_dataparallel_enabled\" (value \"True\"): this distribution is not supported"),
            std::string::npos);
}

TEST(MapHyperparameters, DataGroupIsDecodedToo) {
  StatusOr<MappedHyperparameters> m = Map({{"data_group", "\"data\""}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->data_group, "data");
  EXPECT_TRUE(m->train_args.empty());
  EXPECT_EQ(Error({{"data_group", "[\"a\", \"b\"]"}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"data_group\" is a list (value \"[\\\"a\\\", \\\"b\\\"]\"); "
            "it names one instance group");
}

TEST(MapHyperparameters, AnObjectIsRefusedNamingTheFileKeyAndValue) {
  EXPECT_EQ(Error({{"optimizer", "{\"name\": \"adam\"}"}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"optimizer\" is a JSON object (value "
            "\"{\\\"name\\\": \\\"adam\\\"}\"); a flag takes a string, a number, true/false or (list flags) a list");
}

TEST(MapHyperparameters, ListsWhereOneValueGoesAndBadListsAreRefused) {
  EXPECT_EQ(Error({{"batch_size", "[64, 128]"}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"batch_size\" is a list (value \"[64, 128]\"), but "
            "--batch-size takes one value");
  EXPECT_EQ(Error({{"deep_layers", "[]"}}), "InvalidArgument: /ml/hp.json: hyperparameter \"deep_layers\" is an empty list "
                                            "(value \"[]\")");
  EXPECT_EQ(Error({{"deep_layers", "[[1, 2], 3]"}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"deep_layers\" is a list holding [1,2] (value \"[[1, 2], 3]\"); "
            "list elements are strings, numbers or true/false");
}

TEST(MapHyperparameters, NullAndEmptyValuesAreRefused) {
  EXPECT_EQ(Error({{"optimizer", "null"}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"optimizer\" is null (value \"null\"); give a value or leave "
            "the key out");
  EXPECT_EQ(Error({{"optimizer", "\"\""}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"optimizer\" is empty (value \"\\\"\\\"\"); give a value or "
            "leave the key out");
  EXPECT_EQ(Error({{"cache", ""}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"cache\" is empty (value \"\"); give a value or leave the key "
            "out");
}

TEST(MapHyperparameters, EpochsMustBeAWholeNumberAfterDecoding) {
  EXPECT_EQ(Error({{"epochs", "2.5"}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"epochs\" (value \"2.5\"): --epochs: expected a whole "
            "number, got 2.5");
  EXPECT_EQ(Error({{"epochs", "\"two\""}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"epochs\" (value \"\\\"two\\\"\"): --epochs: expected a "
            "whole number, got 'two'");
  EXPECT_EQ(Error({{"epochs", "0"}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"epochs\" must be a whole number >= 1, got 0");
  // Every option's type, not only epochs'.
  EXPECT_EQ(Error({{"batch_norm", "\"maybe\""}}),
            "InvalidArgument: /ml/hp.json: hyperparameter \"batch_norm\" (value \"\\\"maybe\\\"\"): --batch-norm: "
            "expected true or false, got 'maybe'");
}

TEST(DecodeHyperparameterValue, TheToolkitsRule) {
  EXPECT_EQ(DecodeHyperparameterValue("\"adam\""), "\"adam\"");
  EXPECT_EQ(DecodeHyperparameterValue("adam"), "\"adam\"");  // not JSON: the raw string
  EXPECT_EQ(DecodeHyperparameterValue("[400, 400]"), "[400,400]");
  EXPECT_EQ(DecodeHyperparameterValue("True"), "\"True\"");  // Python's str(True) is no JSON
  EXPECT_EQ(DecodeHyperparameterValue("true"), "true");
  EXPECT_EQ(DecodeHyperparameterValue("3 4"), "\"3 4\"");  // one JSON text or none
  EXPECT_EQ(HyperparameterText("\"data\""), "data");
  EXPECT_EQ(HyperparameterText(" 3 "), "3");
  EXPECT_EQ(HyperparameterText("[1]"), "[1]");
}

}  // namespace
}  // namespace ctrain::launch

namespace ctrain::launch {
namespace {

// The launch front end of the option matrix: every option of the schema is a hyperparameter
// (its default, JSON-encoded as the SDK's framework estimators write it, maps to the flag's
// text and back to the same value), or one the launcher sets itself, refused naming where its
// value comes from.
TEST(MapHyperparameters, EveryOptionOfTheSchemaIsAHyperparameterOrSetByTheLauncher) {
  int mapped = 0, set_by_launch = 0;
  for (const job::OptionSpec& s : job::TrainOptionSchema()) {
    SCOPED_TRACE(s.name);
    nlohmann::json v = s.default_value();
    if (v.is_string() && v.get<std::string>().empty()) v = "x";  // an empty value is refused as such
    if (v.is_array() && v.empty()) v = s.type == job::OptionType::kIntList ? nlohmann::json{8} : nlohmann::json{"x"};
    StatusOr<MappedHyperparameters> m = MapHyperparameters({{s.name, v.dump()}}, "hp.json");
    if (!s.set_by_launch.empty()) {
      ASSERT_FALSE(m.ok());
      EXPECT_NE(m.status().message().find("is set by ctrain launch from " + s.set_by_launch), std::string::npos)
          << m.status().ToString();
      ++set_by_launch;
      continue;
    }
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ASSERT_FALSE(m->train_args.empty());
    EXPECT_EQ(m->values.at(s.name).dump(), job::CoerceOptionValue(s, v)->dump());
    for (const std::string& a : m->train_args) EXPECT_EQ(a.rfind(s.flag() + "=", 0), 0u) << a;
    ++mapped;
  }
  EXPECT_EQ(set_by_launch, 9);  // config, train, valid, model_dir, monitor_dir, monitor_interval_ms, metrics_json,
                                // data_service, training_job_name
  EXPECT_GT(mapped, 70);
}

}  // namespace
}  // namespace ctrain::launch
