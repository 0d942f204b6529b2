// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/deploy/api_answer.h
//
// The deploy tests read what deploy::Deploys answers as the admin API gives it (a status code and
// a JSON body, admin/deploy_answers.h), so that each answer is checked byte for byte as an
// operator's client sees it:
//
//   Answer a = CallApi(&admin::DeployAnswer,
//                      [&](Done<DeployOutcome> d) { deploys->Deploy(r, wait, d); });
//   EXPECT_EQ(a.status, 202);
#ifndef MOLT_TESTS_KERNEL_DEPLOY_API_ANSWER_H_
#define MOLT_TESTS_KERNEL_DEPLOY_API_ANSWER_H_

#include <boost/json.hpp>
#include <future>
#include <memory>
#include <utility>

#include "kernel/src/admin/deploy_answers.h"
#include "kernel/src/admin/http_server.h"

namespace molt::kernel::deploy::test {

struct Answer {
  int status = 0;
  boost::json::object body;
};

// Runs `call` with a Done<T> and waits for its answer, rendered by `render`.
template <class T, class F>
Answer CallApi(admin::HttpResponse (*render)(const Result<T>&), F call) {
  auto p = std::make_shared<std::promise<Answer>>();
  std::future<Answer> fut = p->get_future();
  call(Done<T>([p, render](Result<T> r) {
    const admin::HttpResponse http = render(r);
    p->set_value({http.status, boost::json::parse(http.body).as_object()});
  }));
  return fut.get();
}

}  // namespace molt::kernel::deploy::test

#endif  // MOLT_TESTS_KERNEL_DEPLOY_API_ANSWER_H_
